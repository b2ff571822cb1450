/* A TCP echo server: a fiber per connection, each blocking only itself.
 *   example_echo [PORT]    (default: any free port, printed at start) */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <xfiber.h>

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	ssize_t n;

	while ((n = xf_read(fd, buf, sizeof(buf))) > 0)
		if (xf_write(fd, buf, (size_t)n) != n)
			break;
	xf_close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(argc > 1 ? (uint16_t)atoi(argv[1]) : 0)};
	socklen_t len = sizeof(addr);
	xf_attr detached = XF_ATTR_INIT;
	int lfd, fd;

	detached.detached = true;
	xf_init(NULL);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* SOMAXCONN: a burst of connections (the bench opens 1,000 at once)
	 * overflows a short queue, and each SYN it drops costs a second. */
	if (bind(lfd, (struct sockaddr *)&addr, len) || listen(lfd, SOMAXCONN) ||
	    getsockname(lfd, (struct sockaddr *)&addr, &len))
		return perror("listen"), 1;
	printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
	fflush(stdout);
	while ((fd = xf_accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		if (xf_spawn(NULL, serve, (void *)(intptr_t)fd, &detached))
			xf_close(fd);
	perror("accept");
	return xf_shutdown();
}
