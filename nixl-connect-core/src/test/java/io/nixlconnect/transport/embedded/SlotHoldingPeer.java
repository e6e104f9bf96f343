package io.nixlconnect.transport.embedded;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A hostile local process (run in its own JVM) that tries to hold the server's connection slots without a
 * credential: each connection sends a complete one-round-trip READ head with a random key announcing
 * {@value Wire#INLINE_MAX_RANGES} ranges, then trickles the ranges one byte at a time. A connection the server
 * closes is opened again, so the pressure stays. Loopback only, and it stops by itself.
 *
 * <p>Arguments: port, connections, source addresses (127.0.0.1 up to 127.0.0.n), seconds to run, milliseconds
 * between trickled bytes. Prints {@code READY} once every connection is open, {@code DONE reopened=N} at the end.
 */
public final class SlotHoldingPeer {

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int connections = Integer.parseInt(args[1]);
        int addresses = Integer.parseInt(args[2]);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[3]));
        long interval = Long.parseLong(args[4]);
        List<Socket> sockets = new ArrayList<>(connections);
        for (int i = 0; i < connections; i++) {
            sockets.add(open(port, i % addresses));
        }
        System.out.println("READY");
        System.out.flush();
        long reopened = 0;
        while (System.nanoTime() - until < 0) {
            for (int i = 0; i < sockets.size(); i++) {
                try {
                    OutputStream out = sockets.get(i).getOutputStream();
                    out.write(0);
                    out.flush();
                } catch (IOException closedByTheServer) {
                    sockets.get(i).close();
                    try {
                        sockets.set(i, open(port, i % addresses));
                        reopened++;
                    } catch (IOException refused) {
                        // the server refused or is busy: try again next round
                    }
                }
            }
            Thread.sleep(interval);
        }
        for (Socket socket : sockets) {
            socket.close();
        }
        System.out.println("DONE reopened=" + reopened);
    }

    private static Socket open(int port, int addressIndex) throws IOException {
        Socket socket = new Socket();
        socket.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, (byte) (1 + addressIndex)}), 0));
        socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5000);
        byte[] credential = ServedMemory.newCredential();
        OutputStream out = socket.getOutputStream();
        out.write(RawPeer.head(Wire.READ_INLINE, 6, credential.length, Wire.INLINE_MAX_RANGES));
        out.write(RawPeer.utf8("victim"));
        out.write(credential);
        out.flush();
        return socket;
    }
}
