#ifndef LLMSPOOL_CMICROHTTPD_SHIM_H
#define LLMSPOOL_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

// MHD_start_daemon and MHD_get_daemon_info are variadic; these wrappers fix the options
// the local endpoint and the metrics server use. They bind one IPv4 address; NULL
// (or an address that does not parse) means 127.0.0.1. More than one thread asks for a
// pool of polling threads (each with its own epoll set); the options go as an array so
// that the pool size can be left out.
static inline struct MHD_Daemon *llms_mhd_start_ipv4(
    unsigned int flags, const char *address, uint16_t port,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    unsigned int connection_limit, unsigned int connection_timeout_seconds, unsigned int threads)
{
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (address == NULL || inet_pton(AF_INET, address, &addr.sin_addr) != 1) {
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &addr},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)connection_timeout_seconds, NULL},
        {MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL},
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, (intptr_t)threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/* The metrics listener: an IPv4 or IPv6 literal, and no SO_REUSEPORT, so that a port
   another process holds is refused instead of shared (scrapes would alternate). */
static inline struct MHD_Daemon *llms_mhd_start_exclusive(
    unsigned int flags, const char *address, int ipv6, uint16_t port,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    unsigned int connection_limit, unsigned int connection_timeout_seconds)
{
    struct sockaddr_in addr4;
    struct sockaddr_in6 addr6;
    memset(&addr4, 0, sizeof addr4);
    memset(&addr6, 0, sizeof addr6);
    void *addr;
    if (ipv6) {
        addr6.sin6_family = AF_INET6;
        addr6.sin6_port = htons(port);
        if (inet_pton(AF_INET6, address, &addr6.sin6_addr) != 1) return NULL;
        addr = &addr6;
        flags |= MHD_USE_IPv6;
    } else {
        addr4.sin_family = AF_INET;
        addr4.sin_port = htons(port);
        if (inet_pton(AF_INET, address, &addr4.sin_addr) != 1) return NULL;
        addr = &addr4;
    }
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, addr},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)connection_timeout_seconds, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

static inline int llms_ipv6_parses(const char *address) {
    struct in6_addr parsed;
    return inet_pton(AF_INET6, address, &parsed) == 1;
}

static inline int llms_ipv4_parses(const char *address) {
    struct in_addr parsed;
    return inet_pton(AF_INET, address, &parsed) == 1;
}

static inline uint16_t llms_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

static const enum MHD_ResponseMemoryMode llms_mhd_must_copy = MHD_RESPMEM_MUST_COPY;
static const enum MHD_Result llms_mhd_yes = MHD_YES;
static const enum MHD_Result llms_mhd_no = MHD_NO;
static const ssize_t llms_mhd_content_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t llms_mhd_content_end_with_error = MHD_CONTENT_READER_END_WITH_ERROR;
/* The importer drops this enum's constants (their deprecation macros hide them). */
static const enum MHD_ValueKind llms_mhd_get_argument_kind = MHD_GET_ARGUMENT_KIND;
static const uint64_t llms_mhd_size_unknown = MHD_SIZE_UNKNOWN;
static const enum MHD_ValueKind llms_mhd_header_kind = MHD_HEADER_KIND;
#endif
