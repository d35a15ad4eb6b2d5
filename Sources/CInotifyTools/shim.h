#ifndef LLMSPOOL_CINOTIFYTOOLS_SHIM_H
#define LLMSPOOL_CINOTIFYTOOLS_SHIM_H
// <sys/inotify.h> must come first: inotifytools.h uses its types without including it.
#include <sys/inotify.h>
#include <inotifytools/inotifytools.h>

// `name` is a flexible array member, which Swift does not import.
static inline const char *llms_inotify_event_name(const struct inotify_event *event) {
    return event->len > 0 ? event->name : "";
}
#endif
