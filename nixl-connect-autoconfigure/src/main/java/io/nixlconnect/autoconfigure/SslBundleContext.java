package io.nixlconnect.autoconfigure;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.security.KeyManagementException;
import java.security.SecureRandom;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLContextSpi;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLServerSocketFactory;
import javax.net.ssl.SSLSessionContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslOptions;

/**
 * An SSL bundle's context with the bundle's {@link SslOptions} (enabled protocols and cipher suites) applied to
 * every socket its socket factory creates and every engine it creates, so the embedded transport (which layers
 * its TLS sockets on accepted and connected channels through the socket factory) honours them.
 */
final class SslBundleContext {

    private SslBundleContext() {
    }

    static SSLContext of(SslBundle bundle) {
        SSLContext context = bundle.createSslContext();
        SslOptions options = bundle.getOptions();
        if (options == null || (options.getEnabledProtocols() == null && options.getCiphers() == null)) {
            return context;
        }
        return new SSLContext(new Spi(context, options.getEnabledProtocols(), options.getCiphers()),
                context.getProvider(), context.getProtocol()) {
        };
    }

    private static final class Spi extends SSLContextSpi {
        private final SSLContext context;
        private final String[] protocols;
        private final String[] ciphers;

        Spi(SSLContext context, String[] protocols, String[] ciphers) {
            this.context = context;
            this.protocols = protocols;
            this.ciphers = ciphers;
        }

        @Override
        protected void engineInit(KeyManager[] keys, TrustManager[] trust, SecureRandom random)
                throws KeyManagementException {
            throw new KeyManagementException("already initialised from its SSL bundle");
        }

        @Override
        protected SSLSocketFactory engineGetSocketFactory() {
            return new Factory(context.getSocketFactory(), this);
        }

        @Override
        protected SSLServerSocketFactory engineGetServerSocketFactory() {
            return context.getServerSocketFactory();
        }

        @Override
        protected SSLEngine engineCreateSSLEngine() {
            return apply(context.createSSLEngine());
        }

        @Override
        protected SSLEngine engineCreateSSLEngine(String host, int port) {
            return apply(context.createSSLEngine(host, port));
        }

        @Override
        protected SSLSessionContext engineGetServerSessionContext() {
            return context.getServerSessionContext();
        }

        @Override
        protected SSLSessionContext engineGetClientSessionContext() {
            return context.getClientSessionContext();
        }

        private SSLEngine apply(SSLEngine engine) {
            if (protocols != null) {
                engine.setEnabledProtocols(protocols);
            }
            if (ciphers != null) {
                engine.setEnabledCipherSuites(ciphers);
            }
            return engine;
        }

        Socket apply(Socket socket) {
            if (socket instanceof SSLSocket ssl) {
                if (protocols != null) {
                    ssl.setEnabledProtocols(protocols);
                }
                if (ciphers != null) {
                    ssl.setEnabledCipherSuites(ciphers);
                }
            }
            return socket;
        }
    }

    private static final class Factory extends SSLSocketFactory {
        private final SSLSocketFactory factory;
        private final Spi spi;

        Factory(SSLSocketFactory factory, Spi spi) {
            this.factory = factory;
            this.spi = spi;
        }

        @Override
        public String[] getDefaultCipherSuites() {
            return spi.ciphers != null ? spi.ciphers.clone() : factory.getDefaultCipherSuites();
        }

        @Override
        public String[] getSupportedCipherSuites() {
            return factory.getSupportedCipherSuites();
        }

        @Override
        public Socket createSocket() throws IOException {
            return spi.apply(factory.createSocket());
        }

        @Override
        public Socket createSocket(Socket socket, String host, int port, boolean autoClose) throws IOException {
            return spi.apply(factory.createSocket(socket, host, port, autoClose));
        }

        @Override
        public Socket createSocket(String host, int port) throws IOException {
            return spi.apply(factory.createSocket(host, port));
        }

        @Override
        public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
            return spi.apply(factory.createSocket(host, port, localHost, localPort));
        }

        @Override
        public Socket createSocket(InetAddress host, int port) throws IOException {
            return spi.apply(factory.createSocket(host, port));
        }

        @Override
        public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
                throws IOException {
            return spi.apply(factory.createSocket(address, port, localAddress, localPort));
        }
    }
}
