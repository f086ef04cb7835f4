# SPDX-License-Identifier: MIT
# Installed alongside the binaries and the SDK: man pages, the systemd unit (ExecStart rewritten
# for the install prefix at install time, so `cmake --install --prefix` and DESTDIR both hold),
# an example config and the operator docs.
install(FILES ${CMAKE_SOURCE_DIR}/doc/man/roostd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${CMAKE_SOURCE_DIR}/doc/man/roost.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/roostd.conf
              ${CMAKE_SOURCE_DIR}/packaging/prometheus-rules.yml ${CMAKE_SOURCE_DIR}/doc/OPERATIONS.md
              ${CMAKE_SOURCE_DIR}/doc/API.md ${CMAKE_SOURCE_DIR}/doc/CONFIG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(ROOST_UNIT_SRC ${CMAKE_SOURCE_DIR}/packaging/roostd.service)
set(ROOST_UNIT_TMP ${CMAKE_BINARY_DIR}/packaging/roostd.service)
install(CODE "
  file(READ \"${ROOST_UNIT_SRC}\" unit)
  string(REPLACE \"/usr/bin/roostd\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/roostd\"
         unit \"\${unit}\")
  file(WRITE \"${ROOST_UNIT_TMP}\" \"\${unit}\")
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\" TYPE FILE
       FILES \"${ROOST_UNIT_TMP}\")
")
