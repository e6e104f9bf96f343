package io.nixlconnect.autoconfigure.observation;

import io.micrometer.common.KeyValues;
import io.nixlconnect.Operation;
import io.nixlconnect.autoconfigure.observation.NixlTransferObservationDocumentation.HighCardinalityKeyNames;
import io.nixlconnect.autoconfigure.observation.NixlTransferObservationDocumentation.LowCardinalityKeyNames;

/**
 * The default names and tags of {@code nixl.transfer}: contextual name {@code nixl <kind> <role>}, the
 * {@link LowCardinalityKeyNames} ({@code outcome} and {@code plugin} once the operation ended; {@code name} for a
 * connector observed by bean name) and the
 * {@link HighCardinalityKeyNames}. The failure's class becomes the {@code error} tag through the observation's
 * error, as for every Micrometer observation.
 */
public class DefaultNixlTransferObservationConvention implements NixlTransferObservationConvention {

    public static final String NAME = "nixl.transfer";

    @Override
    public String getName() {
        return NAME;
    }

    @Override
    public String getContextualName(NixlTransferContext context) {
        Operation operation = context.getOperation();
        return "nixl " + NixlOperationTags.kind(operation) + " " + NixlOperationTags.role(operation);
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(NixlTransferContext context) {
        Operation operation = context.getOperation();
        KeyValues values = KeyValues.of(
                LowCardinalityKeyNames.KIND.withValue(NixlOperationTags.kind(operation)),
                LowCardinalityKeyNames.ROLE.withValue(NixlOperationTags.role(operation)),
                LowCardinalityKeyNames.DEVICE.withValue(NixlOperationTags.device(operation)),
                LowCardinalityKeyNames.BACKEND.withValue(context.getBackend()));
        if (context.getConnectorName() != null) {
            values = values.and(LowCardinalityKeyNames.NAME.withValue(context.getConnectorName()));
        }
        // Absent while running, so the long-task timer's series are not split by a value that cannot vary yet.
        return NixlOperationTags.ended(operation)
                ? values.and(LowCardinalityKeyNames.OUTCOME.withValue(NixlOperationTags.outcome(operation)),
                        LowCardinalityKeyNames.PATH.withValue(NixlOperationTags.path(operation)),
                        LowCardinalityKeyNames.PLUGIN.withValue(NixlOperationTags.plugin(operation)))
                : values;
    }

    @Override
    public KeyValues getHighCardinalityKeyValues(NixlTransferContext context) {
        Operation operation = context.getOperation();
        return KeyValues.of(HighCardinalityKeyNames.NOTIFICATION_KEY_FINGERPRINT.withValue(
                        operation.notificationKeyFingerprint()),
                HighCardinalityKeyNames.BYTES.withValue(Long.toString(operation.totalBytes())));
    }
}
