package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Integer values and string forms exactly as the wire format and Python Dynamo have them. */
class EnumsTest {

    @Test
    void operationKind() {
        assertThat(OperationKind.values()).containsExactly(OperationKind.UNSPECIFIED, OperationKind.READ, OperationKind.WRITE);
        assertThat(OperationKind.UNSPECIFIED.value()).isZero();
        assertThat(OperationKind.READ.value()).isEqualTo(1);
        assertThat(OperationKind.WRITE.value()).isEqualTo(2);
        assertThat(OperationKind.READ).hasToString("READ");
        assertThat(OperationKind.WRITE).hasToString("WRITE");
        for (OperationKind kind : OperationKind.values()) {
            assertThat(OperationKind.fromValue(kind.value())).isSameAs(kind);
        }
    }

    @Test
    void operationStatus() {
        assertThat(OperationStatus.values()).containsExactly(OperationStatus.UNINITIALIZED, OperationStatus.INITIALIZED,
                OperationStatus.IN_PROGRESS, OperationStatus.COMPLETE, OperationStatus.CANCELLED, OperationStatus.ERRORED);
        int[] values = {0, 1, 2, 3, 4, 5};
        String[] texts = {"<invalid>", "INIT", "PROC", "DONE", "STOP", "ERR"};
        for (int i = 0; i < values.length; i++) {
            OperationStatus status = OperationStatus.values()[i];
            assertThat(status.value()).as("%s", status.name()).isEqualTo(values[i]);
            assertThat(status).as("%s", status.name()).hasToString(texts[i]);
            assertThat(OperationStatus.fromValue(values[i])).isSameAs(status);
        }
        assertThat(OperationStatus.COMPLETE.isTerminal()).isTrue();
        assertThat(OperationStatus.CANCELLED.isTerminal()).isTrue();
        assertThat(OperationStatus.ERRORED.isTerminal()).isTrue();
        assertThat(OperationStatus.UNINITIALIZED.isTerminal()).isFalse();
        assertThat(OperationStatus.INITIALIZED.isTerminal()).isFalse();
        assertThat(OperationStatus.IN_PROGRESS.isTerminal()).isFalse();
    }

    @Test
    void deviceKind() {
        assertThat(DeviceKind.values()).containsExactly(DeviceKind.UNSPECIFIED, DeviceKind.HOST, DeviceKind.CUDA,
                DeviceKind.XPU);
        assertThat(DeviceKind.UNSPECIFIED.value()).isZero();
        assertThat(DeviceKind.HOST.value()).isEqualTo(1);
        assertThat(DeviceKind.CUDA.value()).isEqualTo(2);
        assertThat(DeviceKind.HOST).hasToString("cpu");
        assertThat(DeviceKind.CUDA).hasToString("cuda");
        assertThat(DeviceKind.XPU.value()).isEqualTo(3); // dynamo PR #9073
        assertThat(DeviceKind.XPU).hasToString("xpu");
        for (DeviceKind kind : DeviceKind.values()) {
            assertThat(DeviceKind.fromValue(kind.value())).isSameAs(kind);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {-1, 3, 4, 100, Integer.MAX_VALUE, Integer.MIN_VALUE})
    void unknownOperationKindAndDeviceKindValuesAreRefused(int value) {
        assertThatThrownBy(() -> OperationKind.fromValue(value)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(value));
        if (value == 3) {
            return; // DeviceKind XPU
        }
        assertThatThrownBy(() -> DeviceKind.fromValue(value)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(value));
    }

    @ParameterizedTest
    @ValueSource(ints = {-1, 6, 7, Integer.MAX_VALUE, Integer.MIN_VALUE})
    void unknownOperationStatusValuesAreRefused(int value) {
        assertThatThrownBy(() -> OperationStatus.fromValue(value)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(value));
    }

    @Test
    void operationKindInMetadataIsItsInteger() {
        RdmaMetadata metadata = RdmaMetadata.of(List.of(new SerializedDescriptor("cpu", 4096, 1)),
                new byte[] {1}, "k", OperationKind.WRITE);
        assertThat(metadata.toJson()).endsWith(",\"operation_kind\":2}");
    }
}
