/* Signals turned into events for the poll loop (a self-pipe), so that the
 * launcher never does real work inside a signal handler. */
#ifndef DCL_SIGNALS_H
#define DCL_SIGNALS_H

/* Installs handlers for SIGCHLD, SIGINT, SIGTERM and SIGHUP and ignores
 * SIGPIPE (a rank that closed its stdin must not kill us). Returns 0 or -1. */
int dcl_signals_install(void);

/* The read end to poll for POLLIN; readable after any handled signal. */
int dcl_signals_fd(void);

/* Empties the self-pipe. Returns the first SIGINT/SIGTERM/SIGHUP received so
 * far (0 if none) and sets *count to how many such signals arrived. */
int dcl_signals_drain(int *count);

/* In a forked rank before exec: default dispositions, nothing blocked. */
void dcl_signals_reset_in_child(void);

#endif
