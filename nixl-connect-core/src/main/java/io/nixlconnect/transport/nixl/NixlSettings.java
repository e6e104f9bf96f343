package io.nixlconnect.transport.nixl;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * How to find and configure NIXL.
 *
 * @param libraryDir        directory holding {@code libnixl_capi.so}; null to search (see {@code docs/nixl.md})
 * @param pluginDir         NIXL backend plugin directory; null for {@code NIXL_PLUGIN_DIR}, else
 *                          {@code <dir of libnixl.so>/plugins}
 * @param backends          backend plugins every agent creates, in order; at least one
 * @param backendParameters parameters given to every backend on top of the plugin's defaults
 *                          (for UCX e.g. {@code ucx_error_handling_mode=none})
 * @param nixlProgressThreadDelayMicros negative (the default): NIXL's own progress thread is off and
 *                          this transport's progress loop drives NIXL; {@code >= 0}: NIXL also runs its
 *                          progress thread, pausing that many microseconds between rounds (0 spins a core)
 */
public record NixlSettings(Path libraryDir, Path pluginDir, List<String> backends,
        Map<String, String> backendParameters, long nixlProgressThreadDelayMicros) {

    public NixlSettings(Path libraryDir, Path pluginDir, List<String> backends, Map<String, String> backendParameters) {
        this(libraryDir, pluginDir, backends, backendParameters, -1);
    }

    public NixlSettings {
        backends = backends == null ? List.of("UCX") : List.copyOf(backends);
        if (backends.isEmpty()) {
            throw new IllegalArgumentException("at least one NIXL backend plugin is needed (e.g. UCX)");
        }
        for (String backend : backends) {
            requireCString("backend name", backend);
        }
        backendParameters = backendParameters == null ? Map.of() : Map.copyOf(backendParameters);
        backendParameters.forEach((key, value) -> {
            requireCString("backend parameter name", key);
            if (value == null || value.indexOf('\0') >= 0) {
                throw new IllegalArgumentException("backend parameter '" + key + "' has no value or a NUL character");
            }
        });
    }

    /** Search for NIXL, UCX backend with its defaults. */
    public static NixlSettings defaults() {
        return new NixlSettings(null, null, List.of("UCX"), Map.of(), -1);
    }

    public NixlSettings withLibraryDir(Path dir) {
        return new NixlSettings(dir, pluginDir, backends, backendParameters, nixlProgressThreadDelayMicros);
    }

    public NixlSettings withPluginDir(Path dir) {
        return new NixlSettings(libraryDir, dir, backends, backendParameters, nixlProgressThreadDelayMicros);
    }

    public NixlSettings withBackends(List<String> names) {
        return new NixlSettings(libraryDir, pluginDir, names, backendParameters, nixlProgressThreadDelayMicros);
    }

    public NixlSettings withBackendParameters(Map<String, String> parameters) {
        return new NixlSettings(libraryDir, pluginDir, backends, parameters, nixlProgressThreadDelayMicros);
    }

    /** Turns NIXL's own progress thread on with the given pause, or off with a negative value. */
    public NixlSettings withNixlProgressThreadDelayMicros(long micros) {
        return new NixlSettings(libraryDir, pluginDir, backends, backendParameters, micros);
    }

    static void requireCString(String what, String value) {
        if (value == null || value.isEmpty() || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(what + " must be non-empty and free of NUL characters, was "
                    + (value == null ? "null" : "'" + value.replace("\0", "\\0") + "'"));
        }
    }
}
