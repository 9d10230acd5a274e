/* `distcomm-launch --remote-agent`: the launcher's hands on a remote host,
 * started over ssh, one per host (one login, however many ranks: sshd's
 * MaxStartups would drop the rest). It reads the setup from stdin (wire.h),
 * writes the hostfile to a private file, starts each rank in its own
 * process group and passes their output and ends back as frames. When the
 * launcher asks (DCL_W_STOP) or goes away (the ssh channel ends) it stops
 * every group: SIGTERM, then SIGKILL after a grace period. Whatever a rank
 * left in its group gets SIGTERM when the rank exits and SIGKILL when its
 * end is reported: on a remote host nobody would see it, so nothing of the
 * job outlives its agent. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forward.h"
#include "hostfile.h"
#include "job.h"
#include "remote.h"
#include "signals.h"
#include "util.h"
#include "wire.h"

/* What the setup frames said. */
struct setup {
    struct dcl_options opts;
    struct dcl_launch_env env;
    int *ranks; /* the MLX_RANKs to run here */
    size_t n_ranks;
    char *strs[8]; /* owned single values: job, token, hostfile, cwd, host */
    char **argv;
    size_t argc;
};

/* Frames as they arrive on stdin; a frame is handled once complete. */
static unsigned char *g_in;
static size_t g_in_len, g_in_cap;

static int read_exact(void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(0, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One whole frame, blocking (setup only). Returns the type or -1. */
static int read_frame(char **payload, size_t *len)
{
    unsigned char h[DCL_WIRE_HEADER];
    if (read_exact(h, sizeof h) != 0)
        return -1;
    *len = dcl_wire_get32(h + 1);
    if (*len > DCL_WIRE_MAX || (*payload = malloc(*len + 1)) == NULL)
        return -1;
    if (read_exact(*payload, *len) != 0) {
        free(*payload);
        return -1;
    }
    (*payload)[*len] = '\0';
    return h[0];
}

static int add_word(char ***v, size_t *n, char *s)
{
    char **grown = realloc(*v, (*n + 2) * sizeof *grown);
    if (grown == NULL)
        return -1;
    *v = grown;
    grown[(*n)++] = s;
    grown[*n] = NULL;
    return 0;
}

static int add_rank(struct setup *s, int rank)
{
    int *grown = realloc(s->ranks, (s->n_ranks + 1) * sizeof *grown);
    if (grown == NULL)
        return -1;
    s->ranks = grown;
    s->ranks[s->n_ranks++] = rank;
    return 0;
}

/* Keeps one frame of the setup; returns 1 on DCL_W_GO, 0 to go on, -1. */
static int take(struct setup *s, int type, char *p)
{
    static const char keep[] = {DCL_W_JOB, DCL_W_TOKEN, DCL_W_HOSTFILE, DCL_W_CWD,
                                DCL_W_CWD_TRY, DCL_W_HOST};
    const char *k = memchr(keep, type, sizeof keep);
    if (k != NULL) {
        free(s->strs[k - keep]);
        s->strs[k - keep] = p;
        return 0;
    }
    int rc = 0;
    if (type == DCL_W_ENV)
        return add_word((char ***)&s->opts.envs, &s->opts.n_envs, p);
    if (type == DCL_W_ARG)
        return add_word(&s->argv, &s->argc, p);
    if (type == DCL_W_RANK)
        rc = add_rank(s, atoi(p));
    else if (type == DCL_W_SIZE)
        s->opts.nranks = atol(p);
    else if (type == DCL_W_VERBOSE)
        s->opts.verbose = dcl_verbose = true;
    else if (type == DCL_W_GO)
        rc = 1;
    else
        rc = -1;
    free(p);
    return rc;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return path != NULL && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads the setup; returns 0, or the exit status after saying why not. */
static int read_setup(struct setup *s)
{
    int rc = 0, type;
    char *p;
    size_t len;
    while (rc == 0 && (type = read_frame(&p, &len)) >= 0)
        rc = take(s, type, p);
    if (rc != 1 || s->argc == 0 || s->n_ranks == 0) {
        dcl_error("the launcher's setup was cut short or garbled");
        return 1;
    }
    snprintf(dcl_where, sizeof dcl_where, "on %s", s->strs[5] ? s->strs[5] : "?");
    s->env.opts = &s->opts;
    s->env.argv = s->argv;
    s->env.job_id = s->strs[0] ? s->strs[0] : "";
    s->env.job_token = s->strs[1] ? s->strs[1] : "";
    s->opts.cwd = s->strs[3] ? s->strs[3] : is_dir(s->strs[4]) ? s->strs[4] : NULL;
    if (s->strs[3] != NULL && !is_dir(s->strs[3])) {
        dcl_error("cannot change directory to '%s': no such directory", s->strs[3]);
        return 1;
    }
    s->env.hostfile = dcl_write_hostfile_text(s->strs[2] ? s->strs[2] : "[]");
    s->env.launcher_pid = getpid();
    return s->env.hostfile == NULL ? 1 : 0;
}

/* ---- running ------------------------------------------------------------ */

struct arank {
    struct dcl_rank r;
    bool termed;   /* SIGTERM sent: its signal death is no news */
    bool reported; /* its DCL_W_EXIT went out */
    int status;    /* what DCL_W_EXIT says */
    int64_t kill_at, drain_until;
};

struct agent {
    struct arank *ranks;
    size_t n;
    bool eof_sent, link_lost;
};

/* Messages about one rank name it, as the launcher would. */
static void where_rank(int rank, const char *host)
{
    snprintf(dcl_where, sizeof dcl_where, "rank %d on %s", rank, host ? host : "?");
}

/* One frame to the launcher; a dead channel is the launcher gone. */
static void send_frame(struct agent *a, char type, int rank, const void *data, size_t len)
{
    static unsigned char f[DCL_WIRE_HEADER + DCL_WIRE_RANK + DCL_WIRE_CHUNK];
    f[0] = (unsigned char)type;
    dcl_wire_put32(f + 1, DCL_WIRE_RANK + len);
    dcl_wire_put32(f + DCL_WIRE_HEADER, (unsigned long)rank);
    memcpy(f + DCL_WIRE_HEADER + DCL_WIRE_RANK, data, len); /* len <= DCL_WIRE_CHUNK */
    if (!a->link_lost && dcl_write_all(1, f, DCL_WIRE_HEADER + DCL_WIRE_RANK + len) != 0)
        a->link_lost = true;
}

static void stop_rank(struct arank *k)
{
    if (k->termed) {
        (void)kill(-k->r.pid, SIGKILL);
        return;
    }
    k->termed = true;
    k->kill_at = dcl_now_ms() + DCL_GRACE_MS;
    (void)kill(-k->r.pid, SIGTERM);
    (void)kill(-k->r.pid, SIGCONT);
}

static void stop_all(struct agent *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->ranks[i].r.running && !a->ranks[i].termed)
            stop_rank(&a->ranks[i]);
}

static struct arank *rank_of(struct agent *a, const unsigned char *payload, size_t len)
{
    if (len < DCL_WIRE_RANK)
        return NULL;
    unsigned long rank = dcl_wire_get32(payload);
    for (size_t i = 0; i < a->n; i++)
        if ((unsigned long)a->ranks[i].r.index == rank)
            return &a->ranks[i];
    return NULL;
}

/* Our stdout or stderr reader went away: so does the rank's (EPIPE there). */
static void shut_stream(struct agent *a, int type, const unsigned char *payload, size_t len)
{
    struct arank *k = rank_of(a, payload, len);
    if (k != NULL)
        dcl_stream_finish(type == DCL_W_SHUT_OUT ? &k->r.out : &k->r.err, k->r.index, false);
}

/* Our stdin goes to every rank, as it does for local ones. */
static void on_input(struct agent *a, int type, const char *payload, size_t len)
{
    if (a->eof_sent)
        return;
    a->eof_sent = type == DCL_W_EOF;
    for (size_t i = 0; i < a->n; i++)
        if (type == DCL_W_INPUT)
            dcl_input_push(&a->ranks[i].r, payload, len);
        else
            dcl_input_flush(&a->ranks[i].r, true);
}

/* Handles the complete frames at the front of g_in. */
static void handle_frames(struct agent *a)
{
    size_t off = 0;
    while (g_in_len - off >= DCL_WIRE_HEADER) {
        const unsigned char *h = g_in + off;
        size_t len = dcl_wire_get32(h + 1);
        if (g_in_len - off - DCL_WIRE_HEADER < len)
            break;
        const unsigned char *payload = h + DCL_WIRE_HEADER;
        if (h[0] == DCL_W_INPUT || h[0] == DCL_W_EOF)
            on_input(a, h[0], (const char *)payload, len);
        else if (h[0] == DCL_W_STOP)
            stop_all(a);
        else if (h[0] == DCL_W_SHUT_OUT || h[0] == DCL_W_SHUT_ERR)
            shut_stream(a, h[0], payload, len);
        off += DCL_WIRE_HEADER + len;
    }
    memmove(g_in, g_in + off, g_in_len - off);
    g_in_len -= off;
}

/* The launcher's side of the channel; its end means the launcher is gone. */
static void read_link(struct agent *a)
{
    if (g_in_cap - g_in_len < 65536) {
        unsigned char *grown = realloc(g_in, g_in_cap + 65536);
        if (grown == NULL)
            return;
        g_in = grown;
        g_in_cap += 65536;
    }
    ssize_t n = read(0, g_in + g_in_len, g_in_cap - g_in_len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        a->link_lost = true;
        return;
    }
    g_in_len += (size_t)n;
    handle_frames(a);
}

/* Sends what the rank wrote on s; closes s at its end. */
static void pump(struct agent *a, struct arank *k, struct dcl_stream *s, char type)
{
    char buf[DCL_WIRE_CHUNK];
    ssize_t n;
    do {
        n = read(s->fd, buf, sizeof buf);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n <= 0) {
        dcl_stream_finish(s, k->r.index, false);
        return;
    }
    send_frame(a, type, k->r.index, buf, (size_t)n);
}

static int status_of(struct arank *k, const char *host)
{
    int st = k->r.wstatus;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    int sig = WTERMSIG(st);
    if (!k->termed) {
        where_rank(k->r.index, host);
        dcl_error("killed by signal %d (%s)", sig, strsignal(sig));
    }
    return 128 + sig;
}

static void reap(struct arank *k)
{
    if (!k->r.running || waitpid(k->r.pid, &k->r.wstatus, WNOHANG) != k->r.pid)
        return;
    k->r.running = false;
    dcl_input_close(&k->r);
    /* What the rank left in its group has no one to answer to here. */
    (void)kill(-k->r.pid, SIGTERM);
    k->drain_until = dcl_now_ms() + DCL_DRAIN_MS;
}

/* A rank's end goes out after its output (or after the drain time, when
 * leftovers of its group hold its pipes open). */
static void report(struct agent *a, struct arank *k, const char *host)
{
    bool streams = k->r.out.fd >= 0 || k->r.err.fd >= 0;
    if (k->reported || k->r.running || (streams && dcl_now_ms() < k->drain_until))
        return;
    dcl_stream_finish(&k->r.out, k->r.index, false);
    dcl_stream_finish(&k->r.err, k->r.index, false);
    if (k->r.pid > 0) {
        k->status = status_of(k, host);
        (void)kill(-k->r.pid, SIGKILL); /* nothing of the job outlives its report */
    }
    unsigned char st[4];
    dcl_wire_put32(st, (unsigned long)k->status);
    send_frame(a, DCL_W_EXIT, k->r.index, st, sizeof st);
    k->reported = true;
}

/* What a pollfd entry stands for: the link, a rank's stdout (0), stderr (1)
 * or stdin (2). */
struct watch {
    struct arank *k;
    int what;
};

static size_t watch_rank(struct pollfd *p, struct watch *w, size_t n, struct arank *k)
{
    if (k->r.out.fd >= 0)
        p[n] = (struct pollfd){k->r.out.fd, POLLIN, 0}, w[n++] = (struct watch){k, 0};
    if (k->r.err.fd >= 0)
        p[n] = (struct pollfd){k->r.err.fd, POLLIN, 0}, w[n++] = (struct watch){k, 1};
    if (k->r.in_fd >= 0 && k->r.inq.len > k->r.inq.off)
        p[n] = (struct pollfd){k->r.in_fd, POLLOUT, 0}, w[n++] = (struct watch){k, 2};
    return n;
}

/* A rank that does not read its stdin holds up our reading of the link. */
static bool input_full(const struct agent *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->ranks[i].r.inq.len - a->ranks[i].r.inq.off >= DCL_INQ_MAX)
            return true;
    return false;
}

static void dispatch(struct agent *a, const struct pollfd *p, const struct watch *w, bool full)
{
    if (w->k == NULL) {
        if (!full || (p->revents & (POLLHUP | POLLERR)))
            read_link(a);
    } else if (w->what == 0) {
        pump(a, w->k, &w->k->r.out, DCL_W_OUT);
    } else if (w->what == 1) {
        pump(a, w->k, &w->k->r.err, DCL_W_ERR);
    } else {
        dcl_input_flush(&w->k->r, a->eof_sent);
    }
}

static void poll_once(struct agent *a, struct pollfd *p, struct watch *w)
{
    size_t n = 0;
    bool full = input_full(a);
    p[n] = (struct pollfd){dcl_signals_fd(), POLLIN, 0}, w[n++] = (struct watch){NULL, -1};
    if (!a->link_lost) /* a full queue still sees the hang-up (POLLHUP) */
        p[n] = (struct pollfd){0, (short)(full ? 0 : POLLIN), 0}, w[n++] = (struct watch){NULL, 0};
    for (size_t i = 0; i < a->n; i++)
        n = watch_rank(p, w, n, &a->ranks[i]);
    if (poll(p, (nfds_t)n, 100) <= 0)
        return;
    for (size_t i = 1; i < n; i++)
        if (p[i].revents != 0)
            dispatch(a, &p[i], &w[i], full);
}

static void check_signals(struct agent *a)
{
    int count;
    if (dcl_signals_drain(&count) != 0)
        stop_all(a); /* sshd or someone there told us to stop */
}

/* Runs until every rank's end has been reported. */
static void supervise(struct agent *a, const char *host, struct pollfd *p, struct watch *w)
{
    bool said = false;
    for (;;) {
        check_signals(a);
        if (a->link_lost && !said) {
            said = true;
            dcl_info("the launcher is gone; stopping the ranks");
            stop_all(a);
        }
        bool all_done = true;
        int64_t now = dcl_now_ms();
        for (size_t i = 0; i < a->n; i++) {
            struct arank *k = &a->ranks[i];
            reap(k);
            if (k->r.running && k->termed && now >= k->kill_at) {
                stop_rank(k);
                k->kill_at = now + DCL_GRACE_MS;
            }
            report(a, k, host);
            all_done &= k->reported;
        }
        if (all_done)
            return;
        poll_once(a, p, w);
    }
}

/* Starts every rank; one that cannot start is reported with its status. */
static void start_all(struct agent *a, struct setup *s)
{
    for (size_t i = 0; i < a->n; i++) {
        struct arank *k = &a->ranks[i];
        k->r.index = s->ranks[i];
        where_rank(k->r.index, s->strs[5]);
        int rc = dcl_spawn_rank(&k->r, &s->env);
        if (rc != 0) {
            if (k->r.running) { /* it ran, but we could not keep up with it */
                (void)kill(-k->r.pid, SIGKILL);
                (void)waitpid(k->r.pid, NULL, 0);
            }
            dcl_input_close(&k->r);
            k->r.pid = -1;
            k->r.running = false;
            k->status = rc;
        }
    }
    snprintf(dcl_where, sizeof dcl_where, "on %s", s->strs[5] ? s->strs[5] : "?");
}

static int run_ranks(struct setup *s)
{
    struct agent a = {.n = s->n_ranks};
    a.ranks = calloc(a.n, sizeof *a.ranks);
    struct pollfd *p = calloc(2 + 3 * a.n, sizeof *p);
    struct watch *w = calloc(2 + 3 * a.n, sizeof *w);
    if (a.ranks != NULL && p != NULL && w != NULL) {
        start_all(&a, s);
        supervise(&a, s->strs[5], p, w);
    } else {
        dcl_error("out of memory");
    }
    for (size_t i = 0; a.ranks != NULL && i < a.n; i++) {
        struct arank *k = &a.ranks[i];
        if (k->r.pid > 0)
            (void)kill(-k->r.pid, SIGKILL); /* nothing of the job outlives its agent */
        dcl_input_close(&k->r);
        dcl_stream_finish(&k->r.out, k->r.index, false);
        dcl_stream_finish(&k->r.err, k->r.index, false);
    }
    int rc = a.ranks != NULL && p != NULL && w != NULL ? 0 : 1;
    free(a.ranks);
    free(p);
    free(w);
    return rc;
}

static void free_setup(struct setup *s)
{
    for (size_t i = 0; i < sizeof s->strs / sizeof s->strs[0]; i++)
        free(s->strs[i]);
    for (size_t i = 0; i < s->opts.n_envs; i++)
        free((char *)s->opts.envs[i]);
    free(s->opts.envs);
    for (size_t i = 0; i < s->argc; i++)
        free(s->argv[i]);
    free(s->argv);
    free(s->ranks);
}

int dcl_agent_main(void)
{
    struct setup s;
    memset(&s, 0, sizeof s);
    if (dcl_signals_install() != 0) {
        dcl_error("cannot install signal handlers");
        return 1;
    }
    int rc = read_setup(&s);
    if (rc == 0)
        rc = run_ranks(&s);
    dcl_remove_hostfile();
    free(g_in);
    free_setup(&s);
    return rc;
}
