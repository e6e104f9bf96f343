package io.nixlconnect;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The host name, resolved once: Python's {@code socket.gethostname()} is the kernel's {@code uname} node name. */
final class Hostname {

    static final String VALUE = resolve();

    private Hostname() {
    }

    private static String resolve() {
        try {
            String kernel = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
            if (!kernel.isEmpty()) {
                return kernel;
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: ask the resolver
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "localhost";
        }
    }
}
