package io.nixlconnect.transport.embedded;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * A bystander on the same host (run in its own JVM, as another user where the test can): a worker with an embedded
 * transport listening on loopback, and a secret in its native memory that it publishes to nobody. Argument, optional:
 * the embedded shared secret to require of every peer. Prints {@code READY port pid secretAddress secretLength};
 * exits when its standard input closes.
 */
public final class SameHostVictim {

    static final int SECRET_BYTES = 256 * 1024;

    /** The secret's bytes: the test knows them, so it can tell whether any reached the reader. */
    static byte[] secret() {
        byte[] secret = new byte[SECRET_BYTES];
        SplittableRandom random = new SplittableRandom(0x5EC2E7L);
        for (int i = 0; i < secret.length; i++) {
            secret[i] = (byte) (0x80 | random.nextInt(128)); // never 0: told apart from wiped or fresh memory
        }
        return secret;
    }

    public static void main(String[] args) throws Exception {
        EmbeddedSettings settings = args.length > 0 ? EmbeddedSettings.defaults().withSharedSecret(args[0])
                : EmbeddedSettings.defaults();
        try (EmbeddedTransport transport = EmbeddedTransport.open(settings);
             Memory secret = new Memory(SECRET_BYTES)) {
            transport.createAgent("bystander");
            byte[] bytes = secret();
            secret.write(0, bytes, 0, bytes.length);
            System.out.println("READY " + transport.port() + " " + ProcessHandle.current().pid() + " "
                    + Pointer.nativeValue(secret) + " " + SECRET_BYTES);
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (in.readLine() != null) {
                // keep running until the test closes our input
            }
        }
    }
}
