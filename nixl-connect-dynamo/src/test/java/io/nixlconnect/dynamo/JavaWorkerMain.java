package io.nixlconnect.dynamo;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A Java worker in a JVM of its own, for tests that SIGKILL it: serves one endpoint through etcd, echoing
 * ({@code echo}) or streaming one response every 20 ms until stopped ({@code slow}); prints
 * {@code READY instance=<id hex>} once registered.
 *
 * <pre>java -cp … io.nixlconnect.dynamo.JavaWorkerMain ETCD_URL NS.COMP.EP MODE LEASE_TTL_SECONDS</pre>
 */
public final class JavaWorkerMain {

    private JavaWorkerMain() {
    }

    public static void main(String[] args) throws Exception {
        DynamoSettings settings = DynamoSettings.builder().discoveryBackend(DiscoveryBackend.ETCD)
                .etcdEndpoints(List.of(java.net.URI.create(args[0]))).etcdLeaseTtl(Duration.ofSeconds(Long.parseLong(args[3])))
                .rpcHost("127.0.0.1").responseStreamHost("127.0.0.1").build();
        DynamoRuntime runtime = DynamoRuntime.start(settings);
        boolean slow = args[2].equals("slow");
        ServedEndpoint served = runtime.serve(args[1], (request, responder) -> {
            if (!slow) {
                responder.send(request.payload());
                return;
            }
            for (long i = 0; i < 100_000 && !request.isStopped(); i++) {
                responder.send(Map.of("index", i));
                Thread.sleep(20);
            }
        });
        System.out.println("READY instance=" + Long.toHexString(served.instanceId()));
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
