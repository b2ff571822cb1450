/*
 * test_kv.c - examples/kv.cpp as its users run it: 16 clients at once set,
 * get and delete keys of their own, and some ask for the heavy AVX-512
 * sum, whose answer must be exact, while the others' requests are served.
 *
 * usage: test_kv PATH-TO-example_kv
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#define CLIENTS 16

static int port;

struct conn {
	int fd;
	char buf[4096];
	size_t have;
};

static void conn_open(struct conn *c)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	c->have = 0;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(c->fd >= 0 && connect(c->fd, (struct sockaddr *)&a, sizeof(a)) == 0);
}

/* Sends one command, returns its one-line answer (without the newline). */
static const char *ask(struct conn *c, const char *cmd, char *out, size_t size)
{
	char line[256];
	size_t len = (size_t)snprintf(line, sizeof(line), "%s\n", cmd);
	char *eol;

	/* One write: two small ones meet Nagle and delayed acks (40 ms each). */
	CHECK(len < sizeof(line) && write(c->fd, line, len) == (ssize_t)len);
	while (!(eol = memchr(c->buf, '\n', c->have))) {
		ssize_t n = read(c->fd, c->buf + c->have, sizeof(c->buf) - c->have);

		if (n <= 0)
			xf_test_fail("the server closed the connection after \"%s\"", cmd);
		c->have += (size_t)n;
	}
	*eol = 0;
	if ((size_t)(eol - c->buf) >= size)
		xf_test_fail("an answer of %zu bytes to \"%s\"", (size_t)(eol - c->buf), cmd);
	memcpy(out, c->buf, (size_t)(eol - c->buf) + 1);
	c->have -= (size_t)(eol + 1 - c->buf);
	memmove(c->buf, eol + 1, c->have);
	return out;
}

static void *client(void *arg)
{
	const int me = (int)(intptr_t)arg;
	struct conn c;
	char cmd[128], out[256], want[64];

	conn_open(&c);
	for (int i = 0; i < 200; i++) {
		snprintf(cmd, sizeof(cmd), "SET k%d-%d value-%d-%d", me, i, me, i);
		CHECK(!strcmp(ask(&c, cmd, out, sizeof(out)), "OK"));
		snprintf(cmd, sizeof(cmd), "GET k%d-%d", me, i);
		snprintf(want, sizeof(want), "value-%d-%d", me, i);
		if (strcmp(ask(&c, cmd, out, sizeof(out)), want))
			xf_test_fail("%s answered \"%s\", not \"%s\"", cmd, out, want);
		if (me % 4 == 0 && i % 50 == 0) {
			/* The heavy one: sum of s..s+n-1, s = len + 0.5. */
			const double n = 20000000, s = (double)strlen(want) + 0.5;
			char exact[64];

			snprintf(cmd, sizeof(cmd), "SUM k%d-%d %.0f", me, i, n);
			snprintf(exact, sizeof(exact), "%.6e", n * s + n * (n - 1) / 2);
			if (strcmp(ask(&c, cmd, out, sizeof(out)), exact))
				xf_test_fail("%s answered %s, not %s", cmd, out, exact);
		}
		snprintf(cmd, sizeof(cmd), "DEL k%d-%d", me, i);
		CHECK(!strcmp(ask(&c, cmd, out, sizeof(out)), "1"));
		CHECK(!strcmp(ask(&c, cmd, out, sizeof(out)), "0"));
	}
	CHECK(!strcmp(ask(&c, "NOSUCH x", out, sizeof(out)), "ERR unknown command"));
	CHECK(!strcmp(ask(&c, "QUIT", out, sizeof(out)), "BYE"));
	close(c.fd);
	return NULL;
}

int main(int argc, char **argv)
{
	char *args[] = {argv[1], "0", NULL};
	pthread_t t[CLIENTS];
	pid_t server;
	int status;
	FILE *f;

	if (argc != 2)
		xf_test_fail("usage: test_kv PATH-TO-example_kv");
	alarm(100);
	server = xf_test_start_server(args, &port, &f);
	for (int i = 0; i < CLIENTS; i++)
		CHECK(pthread_create(&t[i], NULL, client, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < CLIENTS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	kill(server, SIGTERM);
	waitpid(server, &status, 0);
	printf("kv: %d clients served\n", CLIENTS);
	return 0;
}
