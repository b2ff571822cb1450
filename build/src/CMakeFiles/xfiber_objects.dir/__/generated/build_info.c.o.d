src/CMakeFiles/xfiber_objects.dir/__/generated/build_info.c.o: \
 /work/main/build/generated/build_info.c /usr/include/stdc-predef.h
