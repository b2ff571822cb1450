# Empty custom commands generated dependencies file for xfiber_build_info.
# This may be replaced when dependencies are built.
