file(REMOVE_RECURSE
  "libxfiber_testlib.a"
)
