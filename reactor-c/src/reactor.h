/* reactor-c: a small epoll reactor written against async_abi.h alone.
 *
 * This private header holds the reactor's state; each .c file owns one part:
 *
 *   plugin.c   the entry symbol, descriptor, vtable, create/destroy, options,
 *              last_error_message, and the three ways an event ends (cancel,
 *              close, dispose) plus set_ref
 *   loop.c     run_once, the clock, liveness, the deferred queue, the
 *              descriptor table, timers, polls, triggers, wake
 *   io.c       io_submit: requests run as readiness plus a non-blocking call
 *   signal.c   signal_new: a sigaction handler and a process-wide table
 *
 * Rules every file follows (docs/abi/ names them):
 *  - Callbacks run only inside run_once (immediate mode); cancel, close and
 *    everything that happens outside an iteration queue a *deferred* callback
 *    that the next run_once delivers (docs/abi/loop.md).
 *  - After calling a host callback the code never touches that event again
 *    without looking it up afresh: the callback may have disposed (freed) it,
 *    closed its descriptor or created new events.
 *  - A function that fails records one line for last_error_message and
 *    creates nothing (AA-R8).
 */
#ifndef REACTOR_C_H
#define REACTOR_C_H

/* The ABI minor this reactor implements, stated here (never AA_ABI_MINOR, the
 * header's minor: rebuilt against a newer header, the same source would then
 * promise a minor it never implemented). 1: datagram requests and the 1.1
 * vtable. `-DAA_IMPLEMENTS_MINOR=0` builds the 1.0 reactor against a 1.0
 * header (async-abi/include/frozen/async_abi_1_0.h): no datagram requests, no
 * instance_caps; `cargo xtask conformance` and the test matrix build both. */
#ifndef AA_IMPLEMENTS_MINOR
#define AA_IMPLEMENTS_MINOR 1
#endif
#include "async_abi.h"
/* Headers before AA_PLUGIN_MINOR existed (the frozen 1.0 header) leave it to
 * the plugin; the minor is still the one stated above. */
#ifndef AA_PLUGIN_MINOR
#define AA_PLUGIN_MINOR ((uint16_t)(AA_IMPLEMENTS_MINOR))
#endif

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#define RC_NAME "reactor-c"
#define RC_OPTION_PREFIX "c."
#define RC_EVENT_MAGIC 0x52454143u /* "REAC": catches a pointer that is not ours */

/* What this reactor runs: everything but processes, filesystem watches, name
 * resolution, file requests (the host falls back to its blocking pool for
 * all of them but fs watches, which it reports as unsupported). */
#if AA_IMPLEMENTS_MINOR >= 1
#define RC_CAPS_1_1 AA_CAP_IO_DGRAM
#else
#define RC_CAPS_1_1 0
#endif
#define RC_CAPS                                                                               \
    (AA_CAP_TIMER | AA_CAP_POLL | AA_CAP_IO | AA_CAP_TRIGGER | AA_CAP_SIGNAL | AA_CAP_IO_INLINE | \
     RC_CAPS_1_1)

typedef struct Reactor Reactor;
typedef struct Event Event;
typedef struct FdState FdState;

/* --- events -------------------------------------------------------------- */

typedef enum { OPEN, CLOSING, CLOSED } CloseState;

/* A request waiting in one of its descriptor's two queues. */
typedef struct {
    uint32_t opcode;
    int fd;
    uint8_t *buf;       /* the host's, lent until the callback (AA-R5) */
    size_t len;
    int64_t offset;
    AaSockAddr *peer;   /* ACCEPT, RECVFROM: where the peer address goes */
    AaSockAddr target;  /* CONNECT, SENDTO: a copy of the address */
    bool has_target;
    bool peek;
    bool connecting;    /* CONNECT: connect(2) said EINPROGRESS */
    bool queued;        /* in its descriptor's queue */
    Event *next;        /* queue link */
} IoState;

struct Event {
    AaEvent hdr; /* first: the host holds an AaEvent * */
    uint32_t magic;
    Reactor *r;
    void *ud;
    union {
        AaTimerCb timer;
        AaPollCb poll;
        AaIoCb io;
        AaTriggerCb trigger;
        AaSignalCb signal;
    } cb;
    bool referenced;  /* set_ref */
    bool disposed;    /* the host let go: never call back again */
    bool counted;     /* counted in r->alive (see ev_touch) */
    CloseState close;
    int scheduled;    /* deferred items that name this event */
    union {
        struct {
            uint64_t deadline, repeat, seq;
            int heap_index; /* -1: not armed */
        } timer;
        struct {
            int fd;
            FdState *fs;       /* NULL once the descriptor was closed through us */
            uint32_t interest;
            bool armed;        /* cancel disarms; poll_set_interest re-arms */
            bool recheck;      /* report current readiness at the next iteration */
            uint64_t reported; /* iteration of the last report: one per iteration */
            uint32_t due;      /* ready bits to report in this iteration */
            Event *next;       /* the descriptor's list of polls */
        } poll;
        IoState io;
        struct {
            _Atomic int open;  /* trigger_fire is [any]: atomics only */
            _Atomic int fired;
            bool due;
            Event *next, *prev; /* the reactor's list of triggers */
        } trigger;
        struct {
            int signum;
            bool active;
            bool due;
            Event *next, *prev; /* the reactor's list of signal watchers */
        } signal;
    } u;
};

/* --- the reactor --------------------------------------------------------- */

/* What the loop knows about one descriptor: the requests waiting on it, in
 * two FIFO queues (readers: READ, ACCEPT, RECVFROM; writers: WRITE, CONNECT,
 * SENDTO), and the polls watching it. It exists only while something waits,
 * and its epoll registration with it: a descriptor nobody waits on is not
 * registered, so a number the host closed and reused behind our back never
 * inherits a stale registration. */
struct FdState {
    int fd;
    bool registered;   /* in epoll (edge-triggered, every direction) */
    bool always_ready; /* epoll refused it (a regular file): try every iteration */
    bool dirty;        /* in r->dirty: try its queues without waiting for an edge */
    Event *readers, *writers; /* queue heads */
    Event *polls;
};

/* A callback owed to the host, delivered by a later run_once. */
typedef struct {
    Event *ev;
    bool closed;     /* on_closed, else the event's own callback */
    AaStatus status; /* the event's callback: 0 or a reason */
    int64_t value;   /* a request's result, a poll's ready bits */
    AaClosedCb on_closed;
    void *closed_ud;
} Deferred;

struct Reactor {
    AaPluginCtx *ctx;
    int epfd;
    int wakefd; /* an eventfd: wake, trigger_fire and the signal handler write it */
    int max_events;
    uint64_t now;       /* cached CLOCK_MONOTONIC, ns */
    uint64_t iteration; /* run_once count, for the one-report-per-iteration rule */
    bool running;       /* inside run_once */
    uint32_t alive;     /* events counted by ev_touch */
    size_t live_events; /* made and not disposed: destroy is AA_E_BUSY while > 0 */

    /* timers: a binary min-heap on (deadline, seq) */
    Event **heap;
    size_t heap_len, heap_cap;
    uint64_t next_seq;

    /* descriptors, indexed by number */
    FdState **fds;
    size_t fds_cap;
    int *dirty; /* descriptors to try in the next iteration, in the order marked */
    size_t dirty_len, dirty_cap;

    /* Callbacks owed to the host: run_once takes this batch at its start and
     * delivers it at its end, so nothing queued during an iteration runs in
     * that iteration. `spare` is the previous batch's storage, kept. */
    Deferred *deferred;
    size_t deferred_len, deferred_cap;
    Deferred *spare;
    size_t spare_cap;
    struct epoll_event *events; /* max_events of them */
    Event *triggers;
    Event *signals;
    int signal_slot; /* -1 until the first signal_new */
    int signal_count[65]; /* active watchers per signal number */

    char error[256];
    size_t error_len;
};

/* --- shared helpers ------------------------------------------------------ */

/* plugin.c */
AaStatus rc_fail(Reactor *r, AaStatus status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rc_log(const Reactor *r, uint32_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
Event *ev_new(Reactor *r, uint32_t kind, uint32_t flags, void *ud);
Event *ev_check(AaEvent *ev); /* NULL if not one of ours */
void ev_touch(Event *ev);      /* reconcile ev->counted with its state */
void ev_release(Event *ev);    /* free a disposed event nothing refers to any more */
bool ev_active(const Event *ev);

/* loop.c */
uint64_t rc_clock(Reactor *r); /* refresh and return r->now */
bool rc_reserve(Reactor *r, size_t n); /* room for n deferred callbacks */
void rc_defer(Event *ev, AaStatus status, int64_t value);
void rc_defer_closed(Event *ev, AaClosedCb on_closed, void *ud);
void loop_drop_deferred(Reactor *r);
FdState *fd_get(Reactor *r, int fd);
FdState *fd_open(Reactor *r, int fd, AaStatus *err); /* get or make, registered */
void fd_mark_dirty(Reactor *r, FdState *fs);
void fd_maybe_free(Reactor *r, FdState *fs); /* drop it once nothing waits */
int rc_forget_fd(Reactor *r, int fd, bool close_it); /* AA_IO_CLOSE's first half */
void timer_arm(Event *ev, uint64_t first_ns, uint64_t repeat_ns);
bool timer_disarm(Event *ev);
bool poll_withdraw(Event *ev); /* take a poll off its descriptor; true if it had one */
bool trigger_end(Event *ev);
void trigger_unlink(Event *ev);

/* vtable slots, by file */
AaStatus rc_run_once(AaReactor *r, int64_t timeout_ns);
uint32_t rc_alive(const AaReactor *r);
uint64_t rc_now_ns(const AaReactor *r);
AaStatus rc_wake(const AaReactor *r);
AaStatus rc_timer_new(AaReactor *r, uint64_t first_ns, uint64_t repeat_ns, uint32_t flags,
                      AaTimerCb cb, void *ud, AaEvent **out);
AaStatus rc_timer_rearm(AaEvent *ev, uint64_t first_ns, uint64_t repeat_ns);
AaStatus rc_poll_new(AaReactor *r, AaOsHandle fd, uint32_t interest, uint32_t flags, AaPollCb cb,
                     void *ud, AaEvent **out);
AaStatus rc_poll_set_interest(AaEvent *ev, uint32_t interest);
AaStatus rc_trigger_new(AaReactor *r, uint32_t flags, AaTriggerCb cb, void *ud, AaEvent **out);
AaStatus rc_trigger_fire(const AaEvent *ev);
AaStatus rc_io_submit(AaReactor *r, AaIoOp *op, uint32_t flags, AaIoCb cb, void *ud,
                      AaEvent **out);
AaStatus rc_signal_new(AaReactor *r, int32_t signum, uint32_t flags, AaSignalCb cb, void *ud,
                       AaEvent **out);

/* io.c */
bool io_withdraw(Event *ev); /* take a waiting request out of its queue */
int io_drain(Reactor *r, int fd, bool readers);

/* signal.c */
bool signal_stop(Event *ev);
void signal_unlink(Event *ev);
int signal_run(Reactor *r);
void signal_release(Reactor *r);

#endif
