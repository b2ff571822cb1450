# Empty dependencies file for xfiber_testlib.
# This may be replaced when dependencies are built.
