# Empty dependencies file for xstate_test_api.
# This may be replaced when dependencies are built.
