#ifndef LLMSPOOL_CSYSTEM_SHIM_H
#define LLMSPOOL_CSYSTEM_SHIM_H
// libc calls that Swift's Glibc module does not export. statfs is both a struct and a
// function in C, which Swift cannot tell apart: this wrapper returns the type alone.
#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

/// The filesystem type (f_type) of `path`, or -1 with errno set.
static inline long llms_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}

/// sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE): declared by glibc only under
/// _GNU_SOURCE, which Swift's Glibc module is not built with.
static inline int llms_start_writeback(int fd) {
    return (int)syscall(SYS_sync_file_range, fd, 0L, 0L, 2U);
}

/// Names the calling thread for the kernel (prctl is variadic, which Swift cannot call).
static inline int llms_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}
#endif
