file(REMOVE_RECURSE
  "libxfiber.a"
)
