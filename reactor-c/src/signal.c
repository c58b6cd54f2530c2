/* signal.c: signal watches (docs/abi/signal.md).
 *
 * The process-wide half is a sigaction handler and a fixed table of ports,
 * one per loop that watches signals. A port holds the signals its loop
 * watches and those that arrived since it last looked, one bit each, and
 * the loop's wake eventfd. The handler sets the signal's bit in every port
 * that watches it and writes each port's eventfd: every loop is told,
 * whichever thread the kernel picked, and deliveries coalesce.
 *
 * The handler is async-signal-safe: atomics in static memory and write(2),
 * errno saved. A port's `busy` count lets a loop that stops watching (or
 * gives its port back) wait until no handler still uses the old value, so
 * no bit is set for a watcher that is gone and no eventfd is written after
 * its loop closed it.
 *
 * The disposition belongs to the reactor from the first watcher of a signal
 * (in any loop) to the last; the previous one is restored then, if our
 * handler is still the one installed. */
#define _GNU_SOURCE
#include "reactor.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PORTS 64
#define MAX_SIGNAL 64

typedef struct {
    _Atomic int claimed;
    _Atomic int fd;
    _Atomic unsigned busy;
    _Atomic uint64_t watched;
    _Atomic uint64_t pending;
} Port;

static Port ports[PORTS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static int watchers[MAX_SIGNAL + 1]; /* ports watching each signal, under the lock */
static struct sigaction previous[MAX_SIGNAL + 1];

static uint64_t bit(int signum) { return (uint64_t)1 << (signum - 1); }

static void on_signal(int signum) {
    int saved = errno;
    for (int i = 0; i < PORTS; i++) {
        Port *p = &ports[i];
        atomic_fetch_add(&p->busy, 1);
        if (atomic_load(&p->watched) & bit(signum)) {
            atomic_fetch_or(&p->pending, bit(signum));
            uint64_t one = 1;
            int fd = atomic_load(&p->fd);
            if (fd >= 0 && write(fd, &one, sizeof one) < 0) {
                /* EAGAIN: the counter is full, the loop is woken already. */
            }
        }
        atomic_fetch_sub(&p->busy, 1);
    }
    errno = saved;
}

static void quiesce(Port *p) {
    while (atomic_load(&p->busy) != 0) {
        sched_yield();
    }
}

/* Why a signal cannot be watched, or NULL. */
static const char *refusal(int signum) {
    if (signum < 1 || signum > MAX_SIGNAL) return "is not a signal number";
    if (signum == SIGKILL || signum == SIGSTOP) return "cannot be caught";
    if (signum == SIGSEGV || signum == SIGBUS || signum == SIGILL || signum == SIGFPE)
        return "is a synchronous fault: its handler would return into the fault";
    if (signum >= 32 && signum < SIGRTMIN) return "is reserved by the C library";
    if (signum > SIGRTMAX) return "is not a signal number";
    return NULL;
}

/* The first watcher of `signum` in this loop: the port starts watching it,
 * and the first port installs the handler. */
static AaStatus watch(Reactor *r, int signum) {
    Port *p = &ports[r->signal_slot];
    pthread_mutex_lock(&table_lock);
    if (watchers[signum] == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (sigaction(signum, &sa, &previous[signum]) < 0) {
            int e = errno;
            pthread_mutex_unlock(&table_lock);
            return rc_fail(r, -e, "signal_new: sigaction(%d): %s", signum, strerror(e));
        }
    }
    watchers[signum]++;
    pthread_mutex_unlock(&table_lock);
    atomic_fetch_or(&p->watched, bit(signum));
    return AA_OK;
}

/* The last watcher of `signum` in this loop stopped. */
static void unwatch(Reactor *r, int signum) {
    Port *p = &ports[r->signal_slot];
    atomic_fetch_and(&p->watched, ~bit(signum));
    quiesce(p);
    atomic_fetch_and(&p->pending, ~bit(signum));
    pthread_mutex_lock(&table_lock);
    if (--watchers[signum] == 0) {
        struct sigaction now;
        if (sigaction(signum, NULL, &now) == 0 && now.sa_handler == on_signal) {
            sigaction(signum, &previous[signum], NULL);
        }
    }
    pthread_mutex_unlock(&table_lock);
}

static AaStatus claim_port(Reactor *r) {
    if (r->signal_slot >= 0) {
        return AA_OK;
    }
    for (int i = 0; i < PORTS; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&ports[i].claimed, &expected, 1)) {
            atomic_store(&ports[i].pending, 0);
            atomic_store(&ports[i].watched, 0);
            atomic_store(&ports[i].fd, r->wakefd);
            r->signal_slot = i;
            return AA_OK;
        }
    }
    return rc_fail(r, AA_E_NOMEM, "signal_new: %d loops already watch signals", PORTS);
}

void signal_release(Reactor *r) {
    if (r->signal_slot < 0) {
        return;
    }
    Port *p = &ports[r->signal_slot];
    for (int s = 1; s <= MAX_SIGNAL; s++) {
        if (r->signal_count[s] > 0) {
            r->signal_count[s] = 0;
            unwatch(r, s);
        }
    }
    atomic_store(&p->fd, -1);
    quiesce(p);
    atomic_store(&p->claimed, 0);
    r->signal_slot = -1;
}

AaStatus rc_signal_new(AaReactor *ar, int32_t signum, uint32_t flags, AaSignalCb cb, void *ud,
                       AaEvent **out) {
    Reactor *r = (Reactor *)ar;
    if (cb == NULL || out == NULL) {
        return rc_fail(r, AA_E_INVALID, "signal_new: the callback or out is NULL");
    }
    if (flags & ~(uint32_t)AA_EVF_HIDDEN) {
        return rc_fail(r, AA_E_INVALID, "signal_new: unknown flag bits %#x",
                       flags & ~(uint32_t)AA_EVF_HIDDEN);
    }
    const char *why = refusal(signum);
    if (why != NULL) {
        return rc_fail(r, AA_E_INVALID, "signal_new: signal %d %s", signum, why);
    }
    AaStatus st = claim_port(r);
    if (st != AA_OK) {
        return st;
    }
    Event *ev = ev_new(r, AA_EVENT_SIGNAL, flags, ud);
    if (ev == NULL) {
        return rc_fail(r, AA_E_NOMEM, "signal_new: out of memory");
    }
    if (r->signal_count[signum] == 0 && (st = watch(r, signum)) != AA_OK) {
        r->live_events--;
        free(ev);
        return st;
    }
    r->signal_count[signum]++;
    ev->cb.signal = cb;
    ev->u.signal.signum = signum;
    ev->u.signal.active = true;
    /* Watchers are told in creation order: append. */
    Event **link = &r->signals;
    Event *prev = NULL;
    while (*link != NULL) {
        prev = *link;
        link = &(*link)->u.signal.next;
    }
    *link = ev;
    ev->u.signal.prev = prev;
    ev_touch(ev);
    *out = &ev->hdr;
    return AA_OK;
}

bool signal_stop(Event *ev) {
    if (!ev->u.signal.active) {
        return false;
    }
    Reactor *r = ev->r;
    ev->u.signal.active = false;
    ev->u.signal.due = false;
    if (--r->signal_count[ev->u.signal.signum] == 0) {
        unwatch(r, ev->u.signal.signum);
    }
    return true;
}

void signal_unlink(Event *ev) {
    Reactor *r = ev->r;
    if (ev->u.signal.prev != NULL) {
        ev->u.signal.prev->u.signal.next = ev->u.signal.next;
    } else if (r->signals == ev) {
        r->signals = ev->u.signal.next;
    }
    if (ev->u.signal.next != NULL) {
        ev->u.signal.next->u.signal.prev = ev->u.signal.prev;
    }
    ev->u.signal.next = ev->u.signal.prev = NULL;
}

/* Takes the port's pending set once and calls every active watcher of each
 * signal in it once: a watcher made after this, or stopped before its
 * turn, is not called for it. */
int signal_run(Reactor *r) {
    if (r->signal_slot < 0) {
        return 0;
    }
    uint64_t pending = atomic_exchange(&ports[r->signal_slot].pending, 0);
    if (pending == 0) {
        return 0;
    }
    for (Event *ev = r->signals; ev != NULL; ev = ev->u.signal.next) {
        if (ev->u.signal.active && (pending & bit(ev->u.signal.signum))) {
            ev->u.signal.due = true;
        }
    }
    int count = 0;
    for (;;) {
        Event *ev = r->signals;
        while (ev != NULL && !ev->u.signal.due) {
            ev = ev->u.signal.next;
        }
        if (ev == NULL) {
            return count;
        }
        ev->u.signal.due = false;
        ev->cb.signal(&ev->hdr, 0, ev->u.signal.signum, ev->ud);
        count++;
    }
}
