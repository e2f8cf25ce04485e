// What waking a sleeping thread costs on this machine, outside uc: two threads pass a counter back and
// forth through eventfds (as a tokio worker is woken), each pinned to a CPU, and the round trip (two
// wake-ups) and the process's CPU time per round trip are printed with both threads on one CPU, on
// two CPUs, and on two with the second kept busy by a spinning process at nice 19 (the first two CPUs
// the process may run on). On the VM uc is benchmarked on (nested, no guest halt polling) a wake-up
// that crosses CPUs costs several times one on the same CPU, the second CPU idle or busy:
// docs/benchmarks.md, **Durable storage**.
//
//   cc -O2 -pthread -o /tmp/wakeup bench/wakeup.c && /tmp/wakeup [round trips]   (default 20000)
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int ping, pong, rounds, first_cpu, other_cpu;

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu_seconds(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + 1e-6 * (r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("sched_setaffinity");
    exit(1);
  }
}

static void *answer(void *unused) {
  (void)unused;
  pin(other_cpu);
  uint64_t v;
  for (int i = 0; i < rounds; i++) {
    if (read(ping, &v, 8) != 8 || write(pong, &v, 8) != 8) exit(1);
  }
  return NULL;
}

static void measure(const char *what, int cpu) {
  // `cpu` is the second thread's: the first CPU this process may run on, or the second.
  other_cpu = cpu;
  ping = eventfd(0, 0);
  pong = eventfd(0, 0);
  pin(first_cpu);
  pthread_t t;
  pthread_create(&t, NULL, answer, NULL);
  double t0 = seconds(), c0 = cpu_seconds();
  uint64_t v = 1;
  for (int i = 0; i < rounds; i++) {
    if (write(ping, &v, 8) != 8 || read(pong, &v, 8) != 8) exit(1);
  }
  double t1 = seconds(), c1 = cpu_seconds();
  pthread_join(t, NULL);
  close(ping);
  close(pong);
  printf("%-36s round trip %6.1f us, CPU %6.1f us\n", what, (t1 - t0) / rounds * 1e6, (c1 - c0) / rounds * 1e6);
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atoi(argv[1]) : 20000;
  // The first two CPUs this process may run on.
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int cpus[2], found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; c++) {
    if (CPU_ISSET(c, &allowed)) cpus[found++] = c;
  }
  if (found < 2) {
    fprintf(stderr, "needs two CPUs\n");
    return 1;
  }
  first_cpu = cpus[0];
  printf("CPU A = %d, CPU B = %d\n", cpus[0], cpus[1]);
  measure("both threads on CPU A:", cpus[0]);
  measure("CPU A and CPU B, B idle:", cpus[1]);
  pid_t spinner = fork();
  if (spinner == 0) {
    pin(cpus[1]);
    if (nice(19) == -1) perror("nice");
    for (volatile unsigned long x = 0;; x++) {
    }
  }
  usleep(200000);
  measure("CPU A and CPU B, B busy:", cpus[1]);
  kill(spinner, SIGKILL);
  waitpid(spinner, NULL, 0);
  return 0;
}
