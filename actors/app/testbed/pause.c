/*
 * pause: the pod sandbox's init process.
 *
 * Blocks until SIGTERM or SIGINT arrives, then exits 0. While it waits it reaps every child
 * that is handed to it (it is PID 1 of the pod's PID namespace when that is shared), so no
 * zombie outlives its parent. Built with `gcc -static -Os` and packed as an OCI image by
 * images.sh (beside this file).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
    (void)sig;
    _exit(0);
}

static void on_child(int sig) {
    int saved = errno;
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    errno = saved;
}

static int install(int sig, void (*handler)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "-v") == 0) {
        printf("pause (kubelet-actors) 3.9\n");
        return 0;
    }
    if (getpid() != 1) {
        fprintf(stderr, "pause: warning: not PID 1, orphans will not be reaped here\n");
    }
    if (install(SIGINT, on_stop, 0) < 0 || install(SIGTERM, on_stop, 0) < 0 ||
        install(SIGCHLD, on_child, SA_NOCLDSTOP | SA_RESTART) < 0) {
        perror("pause: sigaction");
        return 1;
    }
    for (;;) {
        pause();
    }
    /* not reached */
    return 42;
}
