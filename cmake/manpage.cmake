# Writes a man page for one tool from its --help text (run at build time, so
# the page never drifts from the program):
#   cmake -DTOOL=<path> -DNAME=<name> -DSUMMARY=<one line> -DVERSION=<v> -DOUT=<file.1> -P manpage.cmake
execute_process(COMMAND ${TOOL} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR help STREQUAL "")
  message(FATAL_ERROR "${TOOL} --help failed (${rc})")
endif()
# roff: a backslash is "\e"; a line starting with . or ' would be a request.
string(REPLACE "\\" "\\e" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
string(TOUPPER "${NAME}" upper)
file(WRITE ${OUT}
".TH ${upper} 1 \"\" \"distcomm ${VERSION}\" \"User Commands\"
.SH NAME
${NAME} \\- ${SUMMARY}
.SH DESCRIPTION
.nf
${help}.fi
.SH SEE ALSO
distcomm-launch(1), distcomm-config(1), distcomm-perf(1); the distcomm README.
")
# Installed gzipped, as Debian ships man pages.
file(ARCHIVE_CREATE OUTPUT ${OUT}.gz PATHS ${OUT} FORMAT raw COMPRESSION GZip)
