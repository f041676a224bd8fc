# Packaging: `cpack -G DEB` and `cpack -G TGZ` in the build folder (installer/make-packages.sh
# does both). Installs llmwb (GUI), llmwb-cli, the desktop entry, the icon and AppStream data.
include(GNUInstallDirs)

if(EXISTS ${CMAKE_SOURCE_DIR}/resources/llmwb.desktop)
  install(FILES ${CMAKE_SOURCE_DIR}/resources/llmwb.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
endif()
if(EXISTS ${CMAKE_SOURCE_DIR}/resources/icons/llmwb.svg)
  install(FILES ${CMAKE_SOURCE_DIR}/resources/icons/llmwb.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
endif()
install(FILES ${CMAKE_SOURCE_DIR}/installer/io.github.llmwb.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/ARCHITECTURE.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME "llmwb")
set(CPACK_PACKAGE_VENDOR "LLM Workbench")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Desktop workbench for local LLM inference: chat, profile, compare")
set(CPACK_PACKAGE_CONTACT "LLM Workbench developers <llmwb@localhost>")
set(CPACK_PACKAGE_INSTALL_DIRECTORY "llmwb")
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
include(CPack)
