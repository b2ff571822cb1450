# Empty dependencies file for xfiber_static.
# This may be replaced when dependencies are built.
