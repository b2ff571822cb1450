# Empty dependencies file for xfiber_shared.
# This may be replaced when dependencies are built.
