package io.nixlconnect.dynamo;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A real etcd ({@code ETCD_BINARY}, Debian's etcd-server from .ci/etcd-setup.sh) on loopback, free ports. Public, in
 * this module's test jar, for the sample app's Dynamo tests too.
 */
public final class EtcdServer implements AutoCloseable {

    private final Process process;
    public final URI endpoint;
    private final Path log;

    public EtcdServer(Path directory) throws IOException, InterruptedException {
        String binary = RequiredEnvironment.require("ETCD_BINARY", "the etcd discovery tests need a real etcd");
        int client = freePort();
        int peer = freePort();
        endpoint = URI.create("http://127.0.0.1:" + client);
        String peerUrl = "http://127.0.0.1:" + peer;
        Files.createDirectories(directory);
        log = directory.resolve("etcd.log");
        ProcessBuilder builder = new ProcessBuilder(binary, "--data-dir", directory.resolve("data").toString(), "--name", "test",
                "--listen-client-urls", endpoint.toString(), "--advertise-client-urls", endpoint.toString(),
                "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl, "--initial-cluster",
                "test=" + peerUrl).redirectErrorStream(true).redirectOutput(log.toFile());
        // etcd reads every ETCD_* variable as a flag: the setup's ETCD_BINARY / ETCD_VERSION would be refused.
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

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    DynamoSettings.Builder settings(Duration leaseTtl) {
        return DynamoSettings.builder().discoveryBackend(DiscoveryBackend.ETCD).etcdEndpoints(List.of(endpoint))
                .etcdLeaseTtl(leaseTtl).rpcHost("127.0.0.1").responseStreamHost("127.0.0.1")
                .shutdownGrace(Duration.ofSeconds(5));
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
