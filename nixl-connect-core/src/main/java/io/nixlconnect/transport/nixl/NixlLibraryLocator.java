package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.TransportException;

import java.io.File;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Function;

/**
 * Finds {@code libnixl_capi.so}. Search order, first hit wins:
 * <ol>
 *   <li>the configured library directory ({@link NixlSettings#libraryDir()}), then the system
 *       property {@code nixl.library.path}; a configured directory that lacks the library is an
 *       error, never silently skipped;</li>
 *   <li>{@code NIXL_PREFIX} (default {@code /opt/nvidia/nvda_nixl}): {@code lib/x86_64-linux-gnu},
 *       {@code lib64}, {@code lib};</li>
 *   <li>an installed NIXL Python wheel ({@code nixl}, {@code nixl-cu12}, {@code nixl-cu13}): its
 *       {@code .nixl_cuXX.mesonpy.libs} folder under the site-packages directories in
 *       {@code nixl.python.path} / {@code NIXL_PYTHON_PATH}, {@code VIRTUAL_ENV}, {@code CONDA_PREFIX},
 *       {@code ~/.local}, {@code ~/.pyenv/versions/*}, {@code /usr/local}, {@code /usr};</li>
 *   <li>the system loader path: {@code LD_LIBRARY_PATH}, then the usual library directories.</li>
 * </ol>
 * Python is never run: the wheel is found by looking at well-known places only.
 */
final class NixlLibraryLocator {

    static final String LIBRARY_PATH_PROPERTY = "nixl.library.path";
    static final String PYTHON_PATH_PROPERTY = "nixl.python.path";
    static final String DEFAULT_PREFIX = "/opt/nvidia/nvda_nixl";
    static final List<String> WHEEL_LIB_FOLDERS =
            List.of(".nixl_cu12.mesonpy.libs", ".nixl_cu13.mesonpy.libs", ".nixl.mesonpy.libs");
    private static final List<String> SYSTEM_DIRS = List.of("/usr/local/lib", "/usr/lib/x86_64-linux-gnu",
            "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib");

    private final Function<String, String> env;
    private final Properties properties;

    NixlLibraryLocator(Function<String, String> env, Properties properties) {
        this.env = env;
        this.properties = properties;
    }

    static NixlLibraryLocator forThisProcess() {
        Map<String, String> environment = System.getenv();
        return new NixlLibraryLocator(environment::get, System.getProperties());
    }

    /** Finds NIXL or throws a {@link TransportException} listing every place searched and how to configure it. */
    NixlInstallation locate(NixlSettings settings) {
        List<String> searched = new ArrayList<>();

        Path explicit = settings.libraryDir();
        String explicitSource = "NixlSettings.libraryDir";
        if (explicit == null && notBlank(properties.getProperty(LIBRARY_PATH_PROPERTY))) {
            explicit = Path.of(properties.getProperty(LIBRARY_PATH_PROPERTY).trim());
            explicitSource = "system property " + LIBRARY_PATH_PROPERTY;
        }
        if (explicit != null) {
            Path candidate = explicit.toAbsolutePath().resolve(NixlInstallation.CAPI_FILE);
            if (!Files.isRegularFile(candidate)) {
                throw new TransportException(explicitSource + " is " + explicit + " but " + candidate
                        + " does not exist; point it at the directory that holds " + NixlInstallation.CAPI_FILE
                        + " (NIXL >= 1.1)");
            }
            return found(candidate, settings, explicitSource + "=" + explicit);
        }

        String prefixValue = env.apply("NIXL_PREFIX");
        Path prefix = Path.of(notBlank(prefixValue) ? prefixValue.trim() : DEFAULT_PREFIX);
        String prefixSource = notBlank(prefixValue) ? "NIXL_PREFIX" : "default NIXL prefix";
        for (String sub : List.of("lib/x86_64-linux-gnu", "lib64", "lib")) {
            Path hit = probe(prefix.resolve(sub), searched);
            if (hit != null) {
                return found(hit, settings, prefixSource + "=" + prefix);
            }
        }

        for (Path sitePackages : sitePackagesDirs()) {
            for (String folder : WHEEL_LIB_FOLDERS) {
                Path hit = probe(sitePackages.resolve(folder), searched);
                if (hit != null) {
                    return found(hit, settings, "Python wheel in " + sitePackages);
                }
            }
        }

        for (Path dir : systemDirs()) {
            Path hit = probe(dir, searched);
            if (hit != null) {
                return found(hit, settings, "system library path");
            }
        }

        throw new TransportException("NIXL's C API (" + NixlInstallation.CAPI_FILE + ", NIXL >= 1.1) was not found."
                + " Searched: " + String.join(", ", searched) + "."
                + " Set the system property " + LIBRARY_PATH_PROPERTY
                + " (or NixlSettings.libraryDir) to the directory holding " + NixlInstallation.CAPI_FILE
                + ", or NIXL_PREFIX to NIXL's install prefix, or install the NIXL Python wheel"
                + " (pip install nixl-cu12) and set NIXL_PYTHON_PATH to its site-packages directory"
                + " if it is not in a well-known place.");
    }

    private NixlInstallation found(Path capiLibrary, NixlSettings settings, String source) {
        Path pluginDir = settings.pluginDir();
        if (pluginDir == null && notBlank(env.apply("NIXL_PLUGIN_DIR"))) {
            pluginDir = null; // NIXL reads NIXL_PLUGIN_DIR itself
        } else if (pluginDir == null) {
            // NIXL's default is the plugins folder beside libnixl.so, which sits beside the C API.
            Path beside = capiLibrary.getParent().resolve("plugins");
            pluginDir = Files.isDirectory(beside) ? beside : null;
        }
        if (pluginDir != null && !Files.isDirectory(pluginDir)) {
            throw new TransportException("NIXL plugin directory " + pluginDir + " does not exist"
                    + " (NixlSettings.pluginDir); it must hold libplugin_UCX.so and friends");
        }
        return new NixlInstallation(capiLibrary.toAbsolutePath().normalize(),
                pluginDir == null ? null : pluginDir.toAbsolutePath().normalize(), source);
    }

    private static Path probe(Path dir, List<String> searched) {
        searched.add(dir.toString());
        Path candidate = dir.resolve(NixlInstallation.CAPI_FILE);
        return Files.isRegularFile(candidate) ? candidate : null;
    }

    /** Site-packages directories that may hold a NIXL wheel, configured ones first. */
    List<Path> sitePackagesDirs() {
        Set<Path> dirs = new LinkedHashSet<>();
        for (String configured : List.of(nullToEmpty(properties.getProperty(PYTHON_PATH_PROPERTY)),
                nullToEmpty(env.apply("NIXL_PYTHON_PATH")))) {
            for (String entry : configured.split(File.pathSeparator)) {
                if (notBlank(entry)) {
                    dirs.add(Path.of(entry.trim()));
                }
            }
        }
        List<Path> pythonPrefixes = new ArrayList<>();
        for (String variable : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
            if (notBlank(env.apply(variable))) {
                pythonPrefixes.add(Path.of(env.apply(variable)));
            }
        }
        String home = env.apply("HOME");
        if (notBlank(home)) {
            pythonPrefixes.add(Path.of(home, ".local"));
            pythonPrefixes.addAll(children(Path.of(home, ".pyenv", "versions")));
        }
        pythonPrefixes.add(Path.of("/usr/local"));
        pythonPrefixes.add(Path.of("/usr"));
        for (Path prefix : pythonPrefixes) {
            for (Path pythonDir : children(prefix.resolve("lib"))) {
                if (pythonDir.getFileName().toString().startsWith("python3")) {
                    dirs.add(pythonDir.resolve("site-packages"));
                    dirs.add(pythonDir.resolve("dist-packages"));
                }
            }
        }
        dirs.add(Path.of("/usr/lib/python3/dist-packages"));
        dirs.removeIf(dir -> !Files.isDirectory(dir));
        return List.copyOf(dirs);
    }

    private List<Path> systemDirs() {
        Set<Path> dirs = new LinkedHashSet<>();
        for (String entry : nullToEmpty(env.apply("LD_LIBRARY_PATH")).split(File.pathSeparator)) {
            if (notBlank(entry)) {
                dirs.add(Path.of(entry.trim()));
            }
        }
        SYSTEM_DIRS.forEach(dir -> dirs.add(Path.of(dir)));
        return List.copyOf(dirs);
    }

    private static List<Path> children(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<Path> children = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir)) {
            stream.forEach(children::add);
        } catch (IOException | SecurityException e) {
            return List.of();
        }
        children.sort(null);
        return children;
    }

    private static boolean notBlank(String value) {
        return value != null && !value.isBlank();
    }

    private static String nullToEmpty(String value) {
        return value == null ? "" : value;
    }
}
