/* io.c: completion-level requests (docs/abi/io.md) on a readiness loop. A
 * request is a non-blocking system call: tried at once with
 * AA_IO_TRY_INLINE, else by the next iteration; while it would block it
 * waits in its descriptor's queue and each readiness edge tries the queue's
 * head again.
 *
 *  - Only a queue's head is tried, until one would block: requests on one
 *    descriptor and in one direction complete in submission order. Readers
 *    (READ, ACCEPT, RECVFROM) and writers (WRITE, CONNECT, SENDTO) are two
 *    queues, so a waiting read never holds up a write.
 *  - A request leaves its queue before its callback runs.
 *  - AA_IO_CLOSE never waits: it forgets the descriptor (pending requests
 *    complete with -ECANCELED) and closes it in io_submit; only its callback
 *    is deferred when it was not asked to complete inline.
 *  - File requests (AA_CAP_IO_FILE) are refused with AA_E_UNSUPPORTED: on a
 *    regular file every call "is ready" and blocks the loop, so the host
 *    runs them on its blocking pool. */
#define _GNU_SOURCE
#include "reactor.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* What the minor this reactor implements (reactor.h) defines: 1.1 added the
 * datagram requests, AA_IO_PEEK and the AaIoOp fields from `path` on; a 1.0
 * build knows none of them and reads only the 1.0 fields of an AaIoOp. */
#if AA_IMPLEMENTS_MINOR >= 1
#define RC_IS_RECVFROM(op) ((op) == AA_IO_RECVFROM)
#define RC_IS_SENDTO(op) ((op) == AA_IO_SENDTO)
#define RC_PEEK_FLAG ((uint32_t)AA_IO_PEEK)
#define RC_LAST_OPCODE AA_IO_SENDTO
#define RC_UNKNOWN_OPCODE AA_E_UNSUPPORTED
#else
#define RC_IS_RECVFROM(op) ((void)(op), false)
#define RC_IS_SENDTO(op) ((void)(op), false)
#define RC_PEEK_FLAG 0u
#define RC_LAST_OPCODE AA_IO_CLOSE
/* 1.0 answered an opcode it does not know AA_E_INVALID; 1.1 made it
 * AA_E_UNSUPPORTED (R-IO-12 in docs/abi/io.md). */
#define RC_UNKNOWN_OPCODE AA_E_INVALID
#endif
/* The size of a 1.0 AaIoOp is the header's business, not the minor this
 * reactor implements: a 1.0 reactor built against a 1.1 header still accepts
 * a 1.0 host's shorter op. */
#if AA_ABI_MINOR >= 1
#define RC_OP_SIZE_V1_0 offsetof(AaIoOp, path)
#else
#define RC_OP_SIZE_V1_0 sizeof(AaIoOp)
#endif

static const char *opcode_name(uint32_t opcode) {
    static const char *const names[] = {
        NULL,           "AA_IO_READ",     "AA_IO_WRITE",     "AA_IO_ACCEPT",  "AA_IO_CONNECT",
        "AA_IO_CLOSE",
#if AA_IMPLEMENTS_MINOR >= 1
        "AA_IO_RECVFROM", "AA_IO_SENDTO",    "AA_IO_OPENAT",  "AA_IO_STATX",
        "AA_IO_FSYNC",  "AA_IO_UNLINKAT", "AA_IO_RENAMEAT",  "AA_IO_MKDIRAT", "AA_IO_FTRUNCATE",
#endif
    };
    return opcode < sizeof names / sizeof names[0] ? names[opcode] : NULL;
}

static bool reads(uint32_t opcode) {
    return opcode == AA_IO_READ || opcode == AA_IO_ACCEPT || RC_IS_RECVFROM(opcode);
}

static bool would_block(void) { return errno == EAGAIN || errno == EWOULDBLOCK; }

/* Tries the request's system call once: false if it would block, else true
 * with its result (bytes, a descriptor, 0 or -errno) in *res. */
static bool attempt(IoState *io, int64_t *res) {
    ssize_t n;
    socklen_t len;
    struct sockaddr *peer = io->peer ? (struct sockaddr *)io->peer->storage : NULL;
    struct sockaddr *target = io->has_target ? (struct sockaddr *)io->target.storage : NULL;
    for (;;) {
        switch (io->opcode) {
        case AA_IO_READ:
            if (io->peek) {
                n = recv(io->fd, io->buf, io->len, MSG_PEEK);
            } else if (io->offset >= 0) {
                n = pread(io->fd, io->buf, io->len, io->offset);
            } else {
                n = read(io->fd, io->buf, io->len);
            }
            break;
        case AA_IO_WRITE:
            if (io->offset >= 0) {
                n = pwrite(io->fd, io->buf, io->len, io->offset);
            } else {
                /* send(MSG_NOSIGNAL): a gone peer is -EPIPE, never SIGPIPE. */
                n = send(io->fd, io->buf, io->len, MSG_NOSIGNAL);
                if (n < 0 && errno == ENOTSOCK) {
                    n = write(io->fd, io->buf, io->len);
                }
            }
            break;
        case AA_IO_ACCEPT:
            len = sizeof io->peer->storage;
            n = accept4(io->fd, peer, peer ? &len : NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (n >= 0 && peer) {
                io->peer->len = len;
            }
            break;
        case AA_IO_CONNECT:
            if (!io->connecting) {
                n = connect(io->fd, target, io->target.len);
                if (n < 0 && errno == EINPROGRESS) {
                    io->connecting = true;
                    return false;
                }
            } else {
                /* In progress: the pending error, else whether it is done. */
                int err = 0;
                len = sizeof err;
                if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
                    *res = -err;
                    return true;
                }
                n = connect(io->fd, target, io->target.len);
                if (n < 0 && errno == EISCONN) {
                    n = 0;
                } else if (n < 0 && (errno == EALREADY || errno == EINPROGRESS)) {
                    return false;
                }
            }
            break;
#if AA_IMPLEMENTS_MINOR >= 1
        case AA_IO_RECVFROM:
            len = sizeof io->peer->storage;
            n = recvfrom(io->fd, io->buf, io->len, io->peek ? MSG_PEEK : 0, peer,
                         peer ? &len : NULL);
            if (n >= 0 && peer) {
                io->peer->len = len; /* 0 for an unnamed Unix sender */
            }
            break;
        case AA_IO_SENDTO:
            n = sendto(io->fd, io->buf, io->len, MSG_NOSIGNAL, target,
                       target ? io->target.len : 0);
            break;
#endif
        default:
            *res = -EINVAL;
            return true;
        }
        if (n >= 0) {
            *res = n;
            return true;
        }
        if (errno == EINTR) {
            continue;
        }
        if (would_block()) {
            return false;
        }
        *res = -errno;
        return true;
    }
}

static Event **queue_of(FdState *fs, uint32_t opcode) {
    return reads(opcode) ? &fs->readers : &fs->writers;
}

/* Tries the head requests of one queue of `fd` until one would block, as
 * many as were queued when it started (a callback that submits the next
 * request leaves it for the next iteration). */
int io_drain(Reactor *r, int fd, bool readers) {
    FdState *fs = fd_get(r, fd);
    size_t budget = 0;
    for (Event *e = fs ? (readers ? fs->readers : fs->writers) : NULL; e; e = e->u.io.next) {
        budget++;
    }
    int count = 0;
    for (; budget > 0; budget--) {
        fs = fd_get(r, fd);
        Event *ev = fs ? (readers ? fs->readers : fs->writers) : NULL;
        if (ev == NULL) {
            return count;
        }
        int64_t res;
        if (!attempt(&ev->u.io, &res)) {
            return count;
        }
        *queue_of(fs, ev->u.io.opcode) = ev->u.io.next;
        ev->u.io.next = NULL;
        ev->u.io.queued = false;
        ev_touch(ev);
        fd_maybe_free(r, fs);
        ev->cb.io(&ev->hdr, res, ev->ud);
        count++;
    }
    fs = fd_get(r, fd);
    if (fs != NULL && (readers ? fs->readers : fs->writers) != NULL) {
        fd_mark_dirty(r, fs);
    }
    return count;
}

bool io_withdraw(Event *ev) {
    if (!ev->u.io.queued) {
        return false;
    }
    Reactor *r = ev->r;
    FdState *fs = fd_get(r, ev->u.io.fd);
    Event **head = queue_of(fs, ev->u.io.opcode);
    for (Event **link = head; *link != NULL; link = &(*link)->u.io.next) {
        if (*link == ev) {
            bool was_head = link == head;
            *link = ev->u.io.next;
            /* The next request never waited for an edge of its own. */
            if (was_head && *head != NULL) {
                fd_mark_dirty(r, fs);
            }
            break;
        }
    }
    ev->u.io.next = NULL;
    ev->u.io.queued = false;
    fd_maybe_free(r, fs);
    return true;
}

/* Whether `fd` is a socket: -ENOTSOCK, -EBADF or 0. */
static int socket_check(int fd) {
    int type;
    socklen_t len = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 ? 0 : -errno;
}

static AaStatus copy_address(Reactor *r, const AaSockAddr *addr, AaSockAddr *to) {
    if ((uintptr_t)addr % _Alignof(AaSockAddr) != 0) {
        return rc_fail(r, AA_E_INVALID, "io_submit: misaligned address");
    }
    if (addr->len == 0 || addr->len > sizeof addr->storage) {
        return rc_fail(r, AA_E_INVALID, "io_submit: address length %u is out of range",
                       addr->len);
    }
    *to = *addr;
    return AA_OK;
}

/* AA_IO_CLOSE: never waits, never stopped (cancel, close or dispose of its
 * event only drop the callback). */
static AaStatus submit_close(Reactor *r, AaIoOp *op, int fd, uint32_t flags, AaIoCb cb,
                             void *ud, AaEvent **out) {
    size_t waiters = 0;
    FdState *fs = fd_get(r, fd);
    for (Event *e = fs ? fs->readers : NULL; e; e = e->u.io.next) waiters++;
    for (Event *e = fs ? fs->writers : NULL; e; e = e->u.io.next) waiters++;
    for (Event *e = fs ? fs->polls : NULL; e; e = e->u.poll.next) waiters++;
    bool inline_ok = flags & AA_IO_TRY_INLINE;
    Event *ev = NULL;
    if (!rc_reserve(r, waiters + 1) ||
        (!inline_ok && (ev = ev_new(r, AA_EVENT_IO, 0, ud)) == NULL)) {
        return rc_fail(r, AA_E_NOMEM, "io_submit: out of memory");
    }
    int result = rc_forget_fd(r, fd, true);
    if (result == -EBADF) {
        if (ev != NULL) { /* nothing was created after all (AA-R8) */
            r->live_events--;
            free(ev);
        }
        return rc_fail(r, -EBADF, "io_submit: AA_IO_CLOSE of fd %d: not an open descriptor", fd);
    }
    if (inline_ok) {
        op->result = result;
        return AA_DONE;
    }
    ev->cb.io = cb;
    ev->u.io.opcode = AA_IO_CLOSE;
    ev->u.io.fd = fd;
    rc_defer(ev, 0, result);
    *out = &ev->hdr;
    return AA_OK;
}

AaStatus rc_io_submit(AaReactor *ar, AaIoOp *op, uint32_t flags, AaIoCb cb, void *ud,
                      AaEvent **out) {
    Reactor *r = (Reactor *)ar;
    if (op == NULL) {
        return rc_fail(r, AA_E_INVALID, "io_submit: the op is NULL");
    }
    if (flags & ~(uint32_t)AA_IO_TRY_INLINE) {
        return rc_fail(r, AA_E_INVALID, "io_submit: unknown flag bits %#x",
                       flags & ~(uint32_t)AA_IO_TRY_INLINE);
    }
    /* Read only the host's struct_size bytes (a 1.0 host's op ends where
     * `path` begins) into a zeroed copy; write back only `result`, which
     * every version has. */
    size_t v1_0 = RC_OP_SIZE_V1_0;
    if (op->struct_size < v1_0) {
        return rc_fail(r, AA_E_INVALID,
                       "io_submit: op struct_size %u is smaller than %zu (ABI 1.0)",
                       op->struct_size, v1_0);
    }
    AaIoOp o;
    memset(&o, 0, sizeof o);
    memcpy(&o, op, op->struct_size < sizeof o ? op->struct_size : sizeof o);
    const char *name = opcode_name(o.opcode);
    if (name == NULL) {
        return rc_fail(r, RC_UNKNOWN_OPCODE, "io_submit: unknown opcode %u", o.opcode);
    }
    if (o.opcode > RC_LAST_OPCODE) {
        return rc_fail(r, AA_E_UNSUPPORTED,
                       "io_submit: %s is not supported by " RC_NAME " (no AA_CAP_IO_FILE)", name);
    }
    uint32_t valid = (o.opcode == AA_IO_READ || RC_IS_RECVFROM(o.opcode)) ? RC_PEEK_FLAG : 0;
    if (o.op_flags & ~valid) {
        return rc_fail(r, AA_E_INVALID, "io_submit: op_flags %#x are not valid for %s",
                       o.op_flags & ~valid, name);
    }
    if (cb == NULL || out == NULL) {
        return rc_fail(r, AA_E_INVALID, "io_submit: the callback or out is NULL");
    }
    if (o.fd < 0 || o.fd > INT_MAX) {
        return rc_fail(r, -EBADF, "io_submit: fd %lld is not a descriptor", (long long)o.fd);
    }
    int fd = (int)o.fd;
    if (o.opcode == AA_IO_CLOSE) {
        return submit_close(r, op, fd, flags, cb, ud, out);
    }

    IoState io = {.opcode = o.opcode, .fd = fd, .offset = -1, .peek = o.op_flags & RC_PEEK_FLAG};
    switch (o.opcode) {
    case AA_IO_READ:
    case AA_IO_WRITE:
#if AA_IMPLEMENTS_MINOR >= 1
    case AA_IO_RECVFROM:
    case AA_IO_SENDTO:
#endif
        if (o.buf == NULL && o.len > 0) {
            return rc_fail(r, AA_E_INVALID, "io_submit: NULL buffer with a non-zero length");
        }
        if (o.len > SSIZE_MAX || o.offset < -1) {
            return rc_fail(r, AA_E_INVALID, "io_submit: length or offset out of range");
        }
        io.buf = o.buf;
        io.len = o.len;
        if (o.opcode == AA_IO_READ || o.opcode == AA_IO_WRITE) {
            io.offset = o.offset;
        }
        break;
    default: break;
    }
    if ((o.opcode == AA_IO_ACCEPT || RC_IS_RECVFROM(o.opcode)) && o.addr != NULL) {
        if ((uintptr_t)o.addr % _Alignof(AaSockAddr) != 0) {
            return rc_fail(r, AA_E_INVALID, "io_submit: misaligned address");
        }
        io.peer = o.addr;
    }
    if (o.opcode == AA_IO_CONNECT && o.addr == NULL) {
        return rc_fail(r, AA_E_INVALID, "io_submit: AA_IO_CONNECT needs an address");
    }
    if ((o.opcode == AA_IO_CONNECT || RC_IS_SENDTO(o.opcode)) && o.addr != NULL) {
        if (copy_address(r, o.addr, &io.target) != AA_OK) {
            return AA_E_INVALID;
        }
        io.has_target = true;
    }
    if (io.peek) {
        int s = socket_check(fd);
        if (s == -ENOTSOCK) {
            return rc_fail(r, AA_E_INVALID,
                           "io_submit: AA_IO_PEEK on fd %d, which is not a socket", fd);
        }
        if (s < 0) {
            return rc_fail(r, s, "io_submit: fd %d: %s", fd, strerror(-s));
        }
    }

    /* The fast path: nothing queued ahead in this direction, try it now. */
    FdState *fs = fd_get(r, fd);
    bool tried = false;
    if ((flags & AA_IO_TRY_INLINE) && (fs == NULL || *queue_of(fs, o.opcode) == NULL)) {
        int64_t res;
        tried = true;
        if (attempt(&io, &res)) {
            if (res == -EBADF) {
                return rc_fail(r, -EBADF, "io_submit: fd %d is not an open descriptor", fd);
            }
            op->result = res;
            return AA_DONE;
        }
    }

    AaStatus err = AA_OK;
    fs = fd_open(r, fd, &err);
    if (fs == NULL) {
        return rc_fail(r, err, "io_submit: %s on fd %d: %s", name, fd,
                       err == AA_E_NOMEM ? "out of memory" : strerror(-err));
    }
    Event *ev = ev_new(r, AA_EVENT_IO, 0, ud);
    if (ev == NULL) {
        fd_maybe_free(r, fs);
        return rc_fail(r, AA_E_NOMEM, "io_submit: out of memory");
    }
    ev->cb.io = cb;
    ev->u.io = io;
    ev->u.io.queued = true;
    Event **link = queue_of(fs, o.opcode);
    while (*link != NULL) {
        link = &(*link)->u.io.next;
    }
    *link = ev;
    /* A request nobody tried yet is tried by the next iteration: its data may
     * be there already, and no edge would announce it. */
    if (!tried || fs->always_ready) {
        fd_mark_dirty(r, fs);
    }
    ev_touch(ev);
    *out = &ev->hdr;
    return AA_OK;
}
