package io.nixlconnect;

/** The transfer contract over the embedded transport. */
class EmbeddedTransferContractTest extends TransferContractTest {

    @Override
    ConnectorOptions.Builder options() {
        return ConnectorOptions.builder().backend(TransportBackend.EMBEDDED);
    }
}
