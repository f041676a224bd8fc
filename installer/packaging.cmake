# Packaging: `cpack -G DEB` and `cpack -G TGZ` in the build folder (installer/make-packages.sh
# does both; tests/package/check-package.sh builds, installs, runs and removes the .deb). Installs
# llmwb (GUI), llmwb-cli, the desktop entry, the icons, the AppStream data and the stories260K
# demo model, which both binaries open when no model is named (llmwb/default_model.h).
include(GNUInstallDirs)

# `install` and cpack build only what they install (the targets above), not every test: CI packs
# its Release build folder after the tests, and a developer packs without building the tests.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# The demo model, from shared/ beside the source tree when the package is built (it is never
# committed to the repository): PREFIX/share/llmwb/models/stories260K.
set(LLMWB_DEMO_MODEL_DIR ${LLMWB_SHARED_DIR}/models/stories260K)
if(EXISTS ${LLMWB_DEMO_MODEL_DIR}/stories260K.gguf)
  install(FILES ${LLMWB_DEMO_MODEL_DIR}/stories260K.gguf ${LLMWB_DEMO_MODEL_DIR}/README.md
          DESTINATION ${CMAKE_INSTALL_DATADIR}/llmwb/models/stories260K)
else()
  message(WARNING "llmwb: no ${LLMWB_DEMO_MODEL_DIR}/stories260K.gguf: the package will carry no demo model")
endif()

if(EXISTS ${CMAKE_SOURCE_DIR}/resources/llmwb.desktop)
  install(FILES ${CMAKE_SOURCE_DIR}/resources/llmwb.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
endif()
if(EXISTS ${CMAKE_SOURCE_DIR}/resources/icons/llmwb.svg)
  install(FILES ${CMAKE_SOURCE_DIR}/resources/icons/llmwb.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
endif()
if(EXISTS ${CMAKE_SOURCE_DIR}/resources/icons/llmwb.png)
  install(FILES ${CMAKE_SOURCE_DIR}/resources/icons/llmwb.png
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/256x256/apps)
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
# What dpkg-shlibdeps cannot see: the window icon is an SVG, drawn by Qt's SVG plugins
# (libqt6svg6), loaded at run time. No CUDA package: the CUDA runtime is linked statically and
# cuBLAS opened on first use, so the package installs and runs on the CPU where no CUDA toolkit
# or driver exists.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6svg6")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
include(CPack)
