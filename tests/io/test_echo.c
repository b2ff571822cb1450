/*
 * test_echo.c - runs examples/echo.c as its README shows it, and sends it
 * 64 concurrent connections from kernel threads, each with messages that
 * must come back byte for byte; then stops it with SIGTERM.
 *
 *   io_test_echo PATH-TO-example_echo
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#define CLIENTS	 64
#define MESSAGES 20
#define SIZE	 3000 /* not a multiple of the server's 4096-byte buffer */

static int port;

static void full_write(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		CHECK(w > 0);
		p += w;
		n -= (size_t)w;
	}
}

static void *client(void *arg)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	unsigned seed = (unsigned)(uintptr_t)arg;
	char out[SIZE], in[SIZE];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	for (int m = 0; m < MESSAGES; m++) {
		size_t got = 0;

		for (int i = 0; i < SIZE; i++)
			out[i] = (char)rand_r(&seed);
		full_write(fd, out, SIZE);
		while (got < SIZE) {
			ssize_t r = read(fd, in + got, SIZE - got);

			if (r <= 0)
				xf_test_fail("client %u: read returned %zd (%s) after %zu bytes",
					     (unsigned)(uintptr_t)arg, r, strerror(errno), got);
			got += (size_t)r;
		}
		CHECK(memcmp(in, out, SIZE) == 0);
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	char *args[] = {argc > 1 ? argv[1] : "", NULL};
	pthread_t t[CLIENTS];
	int status;
	pid_t pid;
	FILE *f;

	if (argc != 2)
		xf_test_fail("usage: io_test_echo PATH-TO-example_echo");
	pid = xf_test_start_server(args, &port, &f);
	for (uintptr_t i = 0; i < CLIENTS; i++)
		CHECK(pthread_create(&t[i], NULL, client, (void *)(i + 1)) == 0);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(t[i], NULL);
	CHECK(kill(pid, 0) == 0); /* still serving */
	CHECK(kill(pid, SIGTERM) == 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	fclose(f);
	printf("echo: %d connections, %d messages of %d bytes each, all echoed\n", CLIENTS,
	       MESSAGES, SIZE);
	return 0;
}
