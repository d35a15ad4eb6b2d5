#ifndef LLMSPOOL_CSYSTEM_SHIM_H
#define LLMSPOOL_CSYSTEM_SHIM_H
// libc calls that Swift's Glibc module does not export. statfs is both a struct and a
// function in C, which Swift cannot tell apart: this wrapper returns the type alone.
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <linux/falloc.h>
#include <linux/stat.h>
#include <signal.h>
#include <unistd.h>
#include <spawn.h>
#include <unistd.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child closes every
/// descriptor from `from` up. glibc declares it only under _GNU_SOURCE.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
static inline int llms_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

/// The filesystem type (f_type) of `path`, or -1 with errno set.
static inline long llms_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}

/// The birth time of a file in nanoseconds, through statx: `path` relative to the current
/// folder (links not followed), or the descriptor itself when `path` is "". Returns 0 with
/// the time, 1 when the filesystem keeps no birth time (FUSE, older NFS), -1 with errno.
static inline int llms_birth_time(int fd, const char *path, long long *nanoseconds) {
    // glibc declares statx only under _GNU_SOURCE: the system call itself, with the
    // kernel's own header for the struct (AT_EMPTY_PATH is 0x1000, AT_STATX_SYNC_AS_STAT 0).
    struct statx info;
    int flags = path[0] == 0 ? 0x1000 : AT_SYMLINK_NOFOLLOW;
    if (syscall(SYS_statx, path[0] == 0 ? fd : AT_FDCWD, path, flags, STATX_BTIME, &info) != 0) return -1;
    if (!(info.stx_mask & STATX_BTIME)) return 1;
    *nanoseconds = (long long)info.stx_btime.tv_sec * 1000000000LL + info.stx_btime.tv_nsec;
    return 0;
}

/// sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE): declared by glibc only under
/// _GNU_SOURCE, which Swift's Glibc module is not built with.
static inline int llms_start_writeback(int fd) {
    return (int)syscall(SYS_sync_file_range, fd, 0L, 0L, 2U);
}

/// fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, length): blocks allocated past the file's end,
/// its size unchanged. Declared by glibc only under _GNU_SOURCE.
static inline int llms_reserve_blocks(int fd, long length) {
    return (int)syscall(SYS_fallocate, fd, FALLOC_FL_KEEP_SIZE, 0L, length);
}

/// epoll_event is packed on x86-64, which Swift does not import faithfully: these
/// wrappers take and give plain descriptors and event masks.
static const unsigned int llms_epoll_in = EPOLLIN;
static const unsigned int llms_epoll_out = EPOLLOUT;
static const unsigned int llms_epoll_err = EPOLLERR;
static const unsigned int llms_epoll_hup = EPOLLHUP;

static inline int llms_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int llms_epoll_control(int epfd, int op, int fd, unsigned int events) {
    struct epoll_event event = {0};
    event.events = events;
    event.data.fd = fd;
    return epoll_ctl(epfd, op, fd, &event);
}

/// epoll_wait into two parallel arrays of at most 256 entries.
static inline int llms_epoll_wait(int epfd, int *fds, unsigned int *events, int capacity, int timeout_ms) {
    struct epoll_event list[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epfd, list, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        fds[i] = list[i].data.fd;
        events[i] = list[i].events;
    }
    return count;
}

static inline int llms_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

/// Names the calling thread for the kernel (prctl is variadic, which Swift cannot call).
static inline int llms_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

/// flock(2): like statfs, both a struct and a function in C.
static inline int llms_flock(int fd, int operation) { return flock(fd, operation); }

/// An open file description lock (F_OFD_SETLK) on the whole file: `type` is F_WRLCK,
/// F_RDLCK or F_UNLCK. fcntl is variadic, which Swift cannot call. Fails with EAGAIN when
/// another description holds a conflicting lock.
#ifndef F_OFD_SETLK
#define F_OFD_SETLK 37  /* Linux's value; glibc declares it only under _GNU_SOURCE */
#endif
static inline int llms_ofd_lock(int fd, short type) {
    struct flock lock = {0};
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    return fcntl(fd, F_OFD_SETLK, &lock);
}
static const short llms_lock_write = F_WRLCK;
static const short llms_lock_unlock = F_UNLCK;

/// Whether a signal was sent by another process (`kill -SEGV`, `kill -ABRT`) rather than
/// raised by a fault of this one or by its own abort(): only the latter is a crash.
/// Async-signal-safe (getpid only).
static inline int llms_signal_from_outside(const siginfo_t *info) {
    return info != 0 && info->si_code <= 0 && info->si_pid != getpid();
}

#endif
