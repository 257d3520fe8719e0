# Copies each of FILES that exists into OUT (cmake -P): the panel's
# browser-side libraries, which npm may not have installed.
# FILES is separated by "|": a ";" would split the command's argument.
string(REPLACE "|" ";" FILES "${FILES}")
foreach(f IN LISTS FILES)
  if(EXISTS ${f})
    file(COPY ${f} DESTINATION ${OUT})
  else()
    message(STATUS "panel: ${f} is not installed (ops/install-deps.sh runs npm ci in panel/npm): no terminal widget")
  endif()
endforeach()
