/*
 * test_openssl.c - a real library that keys its state on the thread:
 * OpenSSL's libcrypto, in fibers that share one worker.
 *
 * Eight fibers on one worker, at 50 us slices, sign and verify with one
 * shared RSA key, as a TLS server's fibers do with its certificate's key.
 * RSA blinding is used without a lock by the thread that created it, so a
 * fiber preempted inside a signature, with another fiber of the thread
 * signing meanwhile, produced bad signatures: 1,196 of 1,200 before the
 * runtime treated libcrypto as code that cannot be preempted
 * (preempt/safepoint.c).  Every signature must verify, and ticks must
 * have landed in libcrypto (deferred), or the test proved nothing.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "testlib.h"
#include "xfiber.h"

#define SIGNERS	   8
#define SIGNS_EACH 100

static EVP_PKEY *key;
static atomic_int verified, failed;

static bool sign_and_verify(const unsigned char *msg, size_t len)
{
	unsigned char sig[512];
	size_t sig_len = sizeof(sig);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
		  EVP_DigestSign(ctx, sig, &sig_len, msg, len) == 1;

	EVP_MD_CTX_free(ctx);
	ctx = EVP_MD_CTX_new();
	ok = ok && ctx && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
	     EVP_DigestVerify(ctx, sig, sig_len, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

static void *signer(void *arg)
{
	unsigned char msg[64];

	memset(msg, (int)(intptr_t)arg, sizeof(msg));
	for (int i = 0; i < SIGNS_EACH; i++) {
		msg[0] = (unsigned char)i;
		atomic_fetch_add(sign_and_verify(msg, sizeof(msg)) ? &verified : &failed, 1);
	}
	return NULL;
}

int main(void)
{
	xf_fiber *f[SIGNERS];
	xf_stats st;

	key = EVP_RSA_gen(1024);
	CHECK(key);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 50}), 0);
	for (int i = 0; i < SIGNERS; i++)
		CHECK_ERR(xf_spawn(&f[i], signer, (void *)(intptr_t)i, NULL), 0);
	for (int i = 0; i < SIGNERS; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	EVP_PKEY_free(key);
	printf("openssl: %d of %d signatures verified; %llu preemptions, %llu deferred\n",
	       atomic_load(&verified), SIGNERS * SIGNS_EACH,
	       (unsigned long long)st.total.preemptions,
	       (unsigned long long)st.total.preemptions_deferred);
	if (atomic_load(&failed))
		xf_test_fail("%d RSA signatures failed to verify", atomic_load(&failed));
	if (!st.total.preemptions_deferred)
		xf_test_fail("no tick landed in libcrypto: nothing was tested");
	return 0;
}
