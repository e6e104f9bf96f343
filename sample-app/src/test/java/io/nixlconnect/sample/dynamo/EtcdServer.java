package io.nixlconnect.sample.dynamo;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** A real etcd ({@code ETCD_BINARY}, Debian's etcd-server from .ci/etcd-setup.sh) on loopback, free ports. */
final class EtcdServer implements AutoCloseable {

    private final Process process;
    final URI endpoint;

    EtcdServer(Path directory) throws IOException, InterruptedException {
        String binary = RequiredEnvironment.require("ETCD_BINARY", "the etcd discovery tests need a real etcd");
        int client = freePort();
        int peer = freePort();
        endpoint = URI.create("http://127.0.0.1:" + client);
        String peerUrl = "http://127.0.0.1:" + peer;
        Files.createDirectories(directory);
        Path log = directory.resolve("etcd.log");
        ProcessBuilder builder = new ProcessBuilder(binary, "--data-dir", directory.resolve("data").toString(),
                "--name", "sample", "--listen-client-urls", endpoint.toString(), "--advertise-client-urls",
                endpoint.toString(), "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl,
                "--initial-cluster", "sample=" + peerUrl).redirectErrorStream(true).redirectOutput(log.toFile());
        // etcd reads every ETCD_* variable as a flag: the setup's ETCD_BINARY would be refused.
        builder.environment().keySet().removeIf(name -> name.startsWith("ETCD"));
        process = builder.start();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!answers()) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                close();
                throw new IllegalStateException("etcd did not start: " + Files.readString(log));
            }
            Thread.sleep(50); // polling a process we do not control: it says nothing when it is ready
        }
    }

    private boolean answers() {
        try {
            HttpURLConnection connection = (HttpURLConnection) endpoint.resolve("/version").toURL().openConnection();
            connection.setConnectTimeout(500);
            connection.setReadTimeout(500);
            return connection.getResponseCode() == 200;
        } catch (IOException e) {
            return false;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
