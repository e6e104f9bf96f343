package io.nixlconnect.autoconfigure.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names and tags the {@code nixl.transfer} observation. Define a bean of this type to replace
 * {@link DefaultNixlTransferObservationConvention} (extend it to add or change one key).
 */
public interface NixlTransferObservationConvention extends ObservationConvention<NixlTransferContext> {

    @Override
    default boolean supportsContext(Observation.Context context) {
        return context instanceof NixlTransferContext;
    }
}
