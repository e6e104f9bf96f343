package io.nixlconnect.transport.nixl;

import java.nio.file.Path;

/**
 * A NIXL installation found by {@link NixlLibraryLocator}.
 *
 * @param capiLibrary absolute path of {@code libnixl_capi.so}, or null when only the system loader
 *                    knows it (then {@link #libraryName()} is loaded by name)
 * @param pluginDir   plugin directory to hand NIXL through {@code NIXL_PLUGIN_DIR}; null to let NIXL
 *                    use its own default ({@code <dir of libnixl.so>/plugins})
 * @param source      which search step found it, for logs and health details
 */
record NixlInstallation(Path capiLibrary, Path pluginDir, String source) {

    static final String CAPI_FILE = "libnixl_capi.so";

    String libraryName() {
        return capiLibrary == null ? "nixl_capi" : capiLibrary.toString();
    }

    Path libraryDir() {
        return capiLibrary == null ? null : capiLibrary.getParent();
    }
}
