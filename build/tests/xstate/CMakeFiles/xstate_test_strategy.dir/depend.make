# Empty dependencies file for xstate_test_strategy.
# This may be replaced when dependencies are built.
