#ifndef LLMSPOOL_CSYSTEM_SHIM_H
#define LLMSPOOL_CSYSTEM_SHIM_H
// libc calls that Swift's Glibc module does not export. statfs is both a struct and a
// function in C, which Swift cannot tell apart: this wrapper returns the type alone.
#include <errno.h>
#include <sys/vfs.h>

/// The filesystem type (f_type) of `path`, or -1 with errno set.
static inline long llms_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}
#endif
