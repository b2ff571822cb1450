# Empty dependencies file for xfiber.
# This may be replaced when dependencies are built.
