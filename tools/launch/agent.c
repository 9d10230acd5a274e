/* `distcomm-launch --remote-agent`: the launcher's hands on a remote host,
 * started over ssh, one per rank. It reads the rank's setup from stdin
 * (wire.h), writes the hostfile to a private file, starts the rank in its
 * own process group and passes its output back line by line. When the
 * launcher asks (DCL_W_STOP) or goes away (the ssh channel ends) it stops
 * the whole group: SIGTERM, then SIGKILL after a grace period. Whatever the
 * rank left in its group gets SIGTERM when the rank exits and SIGKILL when
 * the agent does: on a remote host nobody would see it, so nothing of the
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
    int rank;
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
    *len = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
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
        s->rank = atoi(p);
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
    if (rc != 1 || s->argc == 0) {
        dcl_error("the launcher's setup was cut short or garbled");
        return 1;
    }
    snprintf(dcl_where, sizeof dcl_where, "rank %d on %s", s->rank,
             s->strs[5] ? s->strs[5] : "?");
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

struct agent {
    struct dcl_rank r;
    bool eof_sent, termed, link_lost;
    int64_t kill_at, drain_until;
};

static void stop_rank(struct agent *a)
{
    if (a->termed) {
        (void)kill(-a->r.pid, SIGKILL);
        return;
    }
    a->termed = true;
    a->kill_at = dcl_now_ms() + DCL_GRACE_MS;
    (void)kill(-a->r.pid, SIGTERM);
    (void)kill(-a->r.pid, SIGCONT);
}

/* Handles the complete frames at the front of g_in. */
static void handle_frames(struct agent *a)
{
    size_t off = 0;
    while (g_in_len - off >= DCL_WIRE_HEADER) {
        const unsigned char *h = g_in + off;
        size_t len = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
        if (g_in_len - off - DCL_WIRE_HEADER < len)
            break;
        const char *payload = (const char *)h + DCL_WIRE_HEADER;
        if (h[0] == DCL_W_INPUT && !a->eof_sent)
            dcl_input_push(&a->r, payload, len);
        else if (h[0] == DCL_W_EOF && !a->eof_sent) {
            a->eof_sent = true;
            dcl_input_flush(&a->r, true);
        } else if (h[0] == DCL_W_STOP && a->r.running)
            stop_rank(a);
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
        if (a->r.running) {
            dcl_info("the launcher is gone; stopping the rank");
            stop_rank(a);
        }
        return;
    }
    g_in_len += (size_t)n;
    handle_frames(a);
}

static int status_of(const struct agent *a)
{
    int st = a->r.wstatus;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    int sig = WTERMSIG(st);
    if (!a->termed)
        dcl_error("killed by signal %d (%s)", sig, strsignal(sig));
    return 128 + sig;
}

static void reap(struct agent *a)
{
    if (!a->r.running || waitpid(a->r.pid, &a->r.wstatus, WNOHANG) != a->r.pid)
        return;
    a->r.running = false;
    dcl_input_close(&a->r);
    /* What the rank left in its group has no one to answer to here. */
    (void)kill(-a->r.pid, SIGTERM);
    a->drain_until = dcl_now_ms() + DCL_DRAIN_MS;
}

static void poll_once(struct agent *a)
{
    struct pollfd p[5] = {{dcl_signals_fd(), POLLIN, 0}};
    int k = 1;
    bool queue_full = a->r.inq.len - a->r.inq.off >= DCL_INQ_MAX;
    if (!a->link_lost) /* a full queue still sees the hang-up (POLLHUP) */
        p[k++] = (struct pollfd){0, (short)(queue_full ? 0 : POLLIN), 0};
    if (a->r.out.fd >= 0)
        p[k++] = (struct pollfd){a->r.out.fd, POLLIN, 0};
    if (a->r.err.fd >= 0)
        p[k++] = (struct pollfd){a->r.err.fd, POLLIN, 0};
    if (a->r.in_fd >= 0 && a->r.inq.len > a->r.inq.off)
        p[k++] = (struct pollfd){a->r.in_fd, POLLOUT, 0};
    if (poll(p, (nfds_t)k, 100) <= 0)
        return;
    for (int i = 1; i < k; i++) {
        if (p[i].revents == 0)
            continue;
        if (p[i].fd == 0 && (!queue_full || (p[i].revents & (POLLHUP | POLLERR))))
            read_link(a);
        else if (p[i].fd == a->r.out.fd)
            dcl_stream_pump(&a->r.out, a->r.index, false);
        else if (p[i].fd == a->r.err.fd)
            dcl_stream_pump(&a->r.err, a->r.index, false);
        else if (p[i].fd == a->r.in_fd)
            dcl_input_flush(&a->r, a->eof_sent);
    }
}

static void check_signals(struct agent *a)
{
    int count;
    if (dcl_signals_drain(&count) != 0 && a->r.running && !a->termed)
        stop_rank(a); /* sshd or someone there told us to stop */
}

static int supervise(struct agent *a)
{
    for (;;) {
        check_signals(a);
        reap(a);
        int64_t now = dcl_now_ms();
        if (a->r.running && a->termed && now >= a->kill_at) {
            stop_rank(a);
            a->kill_at = now + DCL_GRACE_MS;
        }
        bool streams = a->r.out.fd >= 0 || a->r.err.fd >= 0;
        if (!a->r.running && (!streams || now >= a->drain_until))
            break;
        poll_once(a);
    }
    dcl_stream_finish(&a->r.out, a->r.index, false);
    dcl_stream_finish(&a->r.err, a->r.index, false);
    (void)kill(-a->r.pid, SIGKILL); /* nothing of the job outlives its agent */
    return status_of(a);
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
    struct agent a;
    memset(&a, 0, sizeof a);
    a.r.index = s.rank;
    a.r.pid = -1;
    a.r.in_fd = a.r.out.fd = a.r.err.fd = -1;
    if (rc == 0)
        rc = dcl_spawn_rank(&a.r, &s.env);
    if (rc == 0)
        rc = supervise(&a);
    else if (a.r.pid > 0)
        (void)kill(-a.r.pid, SIGKILL);
    dcl_input_close(&a.r);
    dcl_stream_finish(&a.r.out, a.r.index, false);
    dcl_stream_finish(&a.r.err, a.r.index, false);
    dcl_remove_hostfile();
    free(g_in);
    free_setup(&s);
    return rc;
}
