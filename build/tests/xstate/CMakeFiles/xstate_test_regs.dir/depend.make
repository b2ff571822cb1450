# Empty dependencies file for xstate_test_regs.
# This may be replaced when dependencies are built.
