package io.nixlconnect.transport.nixl;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import io.nixlconnect.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Loads {@code libnixl_capi.so} once per JVM and binds {@link NixlCapi} to it.
 *
 * <p>JNA loads by absolute path, so dependencies the dynamic loader cannot find by itself
 * ({@code libnixl.so}, {@code libnixl_build.so}, Abseil, UCX when the install has no rpath) are
 * preloaded from the library's directory: whenever {@code dlopen} names a missing library, that
 * library is loaded first (it then satisfies the dependency by its soname) and the load is retried.
 * Libraries are opened {@code RTLD_GLOBAL} so NIXL's plugins see their symbols.
 *
 * <p>Before that, the host's own rdma-core ({@code libibverbs.so.1}, {@code libefa.so.1}), where there is one,
 * is loaded {@code RTLD_NOW | RTLD_LOCAL}: see {@link #preloadHostRdmaCore}.
 */
final class NixlNativeLibrary {

    private static final Logger log = LoggerFactory.getLogger(NixlNativeLibrary.class);
    private static final int RTLD_NOW_GLOBAL = 0x002 | 0x100;
    private static final int RTLD_NOW_LOCAL_NODELETE = 0x002 | 0x1000;
    /**
     * The host's rdma-core libraries that NIXL's pip wheel can pull in beside its own bundled copies: UCX's EFA module
     * needs the host's {@code libefa.so.1} (the wheel does not bundle it), which needs the host's libibverbs and libnl.
     * Absolute fallbacks are where that module's RUNPATH would find them.
     */
    private static final List<List<String>> HOST_RDMA_CORE = List.of(
            List.of("libibverbs.so.1", "/usr/lib64/libibverbs.so.1"),
            List.of("libefa.so.1", "/usr/lib64/libefa.so.1"));
    private static final Pattern MISSING_DEPENDENCY =
            Pattern.compile("([A-Za-z0-9_.+-]+\\.so[0-9.]*): cannot open shared object file");
    private static final int MAX_PRELOADS = 64;

    private static NixlInstallation bound;

    private NixlNativeLibrary() {
    }

    /** Binds NIXL from {@code installation}; idempotent for the same library, an error for another. */
    static synchronized void load(NixlInstallation installation) {
        load(installation, NixlSettings.DEFAULT_UCX_LOG_FILE);
    }

    /** Loads NIXL, UCX's messages going to {@code ucxLogFile} (see {@link UcxLog}) unless UCX is loaded already. */
    static synchronized void load(NixlInstallation installation, String ucxLogFile) {
        if (bound != null) {
            if (!String.valueOf(bound.capiLibrary()).equals(String.valueOf(installation.capiLibrary()))) {
                throw new TransportException("NIXL is already loaded from " + bound.libraryName()
                        + " in this JVM; cannot also load " + installation.libraryName());
            }
            return;
        }
        if (installation.pluginDir() != null) {
            // NIXL reads its plugin directory from the environment when its plugin manager starts.
            LibC.INSTANCE.setenv("NIXL_PLUGIN_DIR", installation.pluginDir().toString(), 1);
        }
        leaveFaultSignalsToTheJvm();
        UcxLog.route(ucxLogFile);
        preloadHostRdmaCore();
        NativeLibrary library = openVerified(installation);
        NixlCapi.bind(library);
        bound = installation;
        log.info("NIXL C API loaded from {} ({})", installation.libraryName(), installation.source());
    }

    /** Opens the library and checks it is a real NIXL C API of a supported version, before binding. */
    static NativeLibrary openVerified(NixlInstallation installation) {
        NativeLibrary library = open(installation);
        List<String> missing = NixlCapi.missingSymbols(library);
        if (!missing.isEmpty()) {
            throw new TransportException(installation.libraryName() + " is not a usable NIXL C API: it lacks "
                    + missing + "; NIXL >= 1.1 is required");
        }
        // Ask before anything else: a stub build aborts the process on most other calls.
        byte stub = (byte) library.getFunction("nixl_capi_is_stub").invokeInt(new Object[0]);
        if (stub != 0) {
            throw new TransportException(installation.libraryName() + " is NIXL's stub build (nixl_capi_is_stub()"
                    + " is true): it was built without NIXL and cannot move data; install a real NIXL");
        }
        return library;
    }

    /**
     * Keeps UCX's fault handlers out of the JVM. UCX installs handlers for SIGSEGV, SIGBUS, SIGILL and SIGFPE when it
     * starts ({@code UCX_ERROR_SIGNALS}), in place of the JVM's; but the JVM raises SIGSEGV on purpose (an implicit null
     * check in compiled code becomes a {@code NullPointerException} that way), and UCX's handler then aborts the process:
     * a producer died so in the soak ("Caught signal 11 … address 0x24", its backtrace ending in JIT-compiled code). An
     * empty list leaves these signals to the JVM; a value the user set is kept. Must run before UCX is loaded: it reads
     * the variable once, when it starts.
     */
    static void leaveFaultSignalsToTheJvm() {
        LibC.INSTANCE.setenv("UCX_ERROR_SIGNALS", "", 0);
    }

    /**
     * Keeps the host's libnl apart from the copy bundled in NIXL's wheel, which otherwise crashes the JVM at exit.
     *
     * <p>NIXL's pip wheel bundles libibverbs, libmlx5, libnl-3 and libnl-route-3 under hash-suffixed names, but UCX's
     * EFA module in it links the host's {@code libefa.so.1}, and through it the host's {@code libibverbs.so.1} and
     * {@code libnl-route-3.so.200}. When UCX loads that module (at agent creation, whatever the hardware), the host's
     * libnl-route is relocated inside that module's search list, where the wheel's copy comes first: its constructors
     * register their traffic-control ops into the wheel's copy (refused there as duplicates), and at exit its
     * destructors unregister those never-linked ops from the wheel's copy: SIGSEGV in {@code rtnl_tc_unregister}.
     * Loading the host's libraries first, with {@code RTLD_NOW} (every symbol bound at once) and {@code RTLD_LOCAL}
     * (invisible to the wheel's libraries), binds the host's libnl to itself before the wheel's copy exists; UCX then
     * reuses the loaded host libraries, and each libnl keeps to its own lists. InfiniBand and EFA stay usable. A host
     * without rdma-core has nothing to preload.
     */
    static void preloadHostRdmaCore() {
        Map<String, Object> options = Map.of(Library.OPTION_OPEN_FLAGS, RTLD_NOW_LOCAL_NODELETE);
        for (List<String> candidates : HOST_RDMA_CORE) {
            for (String candidate : candidates) {
                if (candidate.startsWith("/") && !Files.isRegularFile(Path.of(candidate))) {
                    continue;
                }
                try {
                    NativeLibrary.getInstance(candidate, options);
                    log.debug("preloaded the host's {} ahead of NIXL", candidate);
                    break;
                } catch (UnsatisfiedLinkError e) {
                    log.debug("no host {} to preload: {}", candidate, e.getMessage());
                }
            }
        }
    }

    static synchronized NixlInstallation bound() {
        return bound;
    }

    private static NativeLibrary open(NixlInstallation installation) {
        Map<String, Object> options = Map.of(Library.OPTION_OPEN_FLAGS, RTLD_NOW_GLOBAL);
        if (installation.capiLibrary() == null) {
            return openOrExplain(installation.libraryName(), options, List.of());
        }
        List<Path> dependencyDirs = dependencyDirs(installation.libraryDir());
        Set<String> preloaded = new LinkedHashSet<>();
        return openWithDependencies(installation.capiLibrary(), options, dependencyDirs, preloaded);
    }

    private static NativeLibrary openWithDependencies(Path library, Map<String, Object> options,
            List<Path> dependencyDirs, Set<String> preloaded) {
        while (true) {
            try {
                return NativeLibrary.getInstance(library.toString(), options);
            } catch (UnsatisfiedLinkError e) {
                String dependency = missingDependency(e);
                Path found = dependency == null ? null : find(dependency, dependencyDirs);
                if (found == null || preloaded.contains(dependency) || preloaded.size() >= MAX_PRELOADS) {
                    throw new TransportException("cannot load " + library + ": " + e.getMessage()
                            + (dependency == null ? "" : " (looked for " + dependency + " in " + dependencyDirs
                                    + "; add its directory to LD_LIBRARY_PATH)"), e);
                }
                preloaded.add(dependency);
                openWithDependencies(found, options, dependencyDirs, preloaded);
            }
        }
    }

    private static NativeLibrary openOrExplain(String name, Map<String, Object> options, List<Path> dirs) {
        try {
            return NativeLibrary.getInstance(name, options);
        } catch (UnsatisfiedLinkError e) {
            throw new TransportException("cannot load " + name + ": " + e.getMessage(), e);
        }
    }

    static String missingDependency(UnsatisfiedLinkError error) {
        String message = String.valueOf(error.getMessage());
        Matcher matcher = MISSING_DEPENDENCY.matcher(message);
        String last = null;
        while (matcher.find()) {
            last = matcher.group(1);
        }
        return last;
    }

    /** The library's own directory, its plugins, and the usual homes of UCX and Abseil beside a NIXL prefix. */
    private static List<Path> dependencyDirs(Path libraryDir) {
        List<Path> dirs = new ArrayList<>();
        dirs.add(libraryDir);
        Path parent = libraryDir.getParent();
        if (parent != null) {
            dirs.add(parent);
            Path grandParent = parent.getParent();
            if (grandParent != null) {
                for (String sub : List.of("lib", "lib64", "lib/x86_64-linux-gnu")) {
                    dirs.add(grandParent.resolve(sub));
                }
            }
        }
        String ucx = System.getenv("UCX_PREFIX");
        if (ucx != null && !ucx.isBlank()) {
            dirs.add(Path.of(ucx, "lib"));
        }
        dirs.add(Path.of("/usr/local/ucx/lib"));
        dirs.removeIf(dir -> !Files.isDirectory(dir));
        return dirs.stream().distinct().toList();
    }

    private static Path find(String fileName, List<Path> dirs) {
        for (Path dir : dirs) {
            Path candidate = dir.resolve(fileName);
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    /** The libc function needed: {@code setenv}, so NIXL and UCX see what is set for them before they start. */
    interface LibC extends Library {
        LibC INSTANCE = Native.load("c", LibC.class);

        int setenv(String name, String value, int overwrite);
    }
}
