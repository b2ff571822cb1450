# Empty dependencies file for xstate_test_info_json.
# This may be replaced when dependencies are built.
