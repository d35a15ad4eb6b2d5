#ifndef LLMSPOOL_CCURL_SHIM_H
#define LLMSPOOL_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift
// cannot call: these typed wrappers pin down each argument type.
typedef size_t (*llms_curl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);

static inline CURLcode llms_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode llms_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode llms_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode llms_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode llms_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode llms_easy_setopt_callback(CURL *h, CURLoption o, llms_curl_data_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode llms_easy_setopt_prereq(CURL *h, curl_prereq_callback v) { return curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, v); }
static inline CURLcode llms_easy_setopt_xferinfo(CURL *h, curl_xferinfo_callback v) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, v); }

static inline CURLcode llms_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode llms_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode llms_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode llms_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode llms_multi_setopt_pointer(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode llms_multi_setopt_socket_callback(CURLM *m, curl_socket_callback v) { return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, v); }
static inline CURLMcode llms_multi_setopt_timer_callback(CURLM *m, curl_multi_timer_callback v) { return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, v); }

// CURL_SOCKET_TIMEOUT is a macro of a macro; Swift does not see it.
static const curl_socket_t llms_curl_socket_timeout = CURL_SOCKET_TIMEOUT;

// CURLMsg.data is a union; Swift reads it awkwardly.
static inline CURLcode llms_curlmsg_result(const CURLMsg *msg) { return msg->data.result; }

static const size_t llms_curl_writefunc_pause = CURL_WRITEFUNC_PAUSE;
static const size_t llms_curl_readfunc_abort = CURL_READFUNC_ABORT;
#endif
