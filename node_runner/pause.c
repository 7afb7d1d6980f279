/* The sandbox ("pause") process of the lab's real node: holds a Pod's namespaces until
 * it is told to stop. A stand-in for registry.k8s.io/pause, built here because no registry
 * is reachable; it does what upstream's pause.c does (reap children, exit on SIGINT/SIGTERM). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
  struct sigaction a = {0}, b = {0};
  a.sa_handler = stop;
  b.sa_handler = reap;
  b.sa_flags = SA_NOCLDSTOP;
  if (sigaction(SIGINT, &a, NULL) < 0 || sigaction(SIGTERM, &a, NULL) < 0 ||
      sigaction(SIGCHLD, &b, NULL) < 0)
    return 1;
  for (;;) pause();
}
