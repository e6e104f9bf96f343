package io.nixlconnect.autoconfigure;

import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.SerializedDescriptor;
import org.springframework.aot.hint.BindingReflectionHintsRegistrar;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;

/**
 * What an AOT-processed application (and a GraalVM native image) needs beyond what Spring infers: the types
 * applications serialise with their own Jackson mapper, and what JNA reaches by reflection or loads as a
 * resource for the NIXL backend. See docs/aot.md.
 */
class NixlConnectRuntimeHints implements RuntimeHintsRegistrar {

    /** JNA's own native stub, which it extracts from its jar at start-up. */
    static final String JNA_DISPATCH_LIBRARY = "com/sun/jna/linux-x86-64/libjnidispatch.so";

    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        // Request and response bodies: RdmaMetadata travels through the application's JsonMapper.
        new BindingReflectionHintsRegistrar().registerReflectionHints(hints.reflection(), RdmaMetadata.class,
                SerializedDescriptor.class);
        hints.resources().registerPattern(JNA_DISPATCH_LIBRARY);
        // Direct-mapped natives: Native.register finds the class's native methods reflectively.
        hints.reflection().registerType(TypeReference.of("io.nixlconnect.transport.nixl.NixlCapi"),
                MemberCategory.INVOKE_DECLARED_METHODS);
        // Interface-mapped libc (dlerror and friends): JNA builds a JDK proxy for it.
        TypeReference libc = TypeReference.of("io.nixlconnect.transport.nixl.NixlNativeLibrary$LibC");
        hints.reflection().registerType(libc, MemberCategory.INVOKE_PUBLIC_METHODS);
        hints.proxies().registerJdkProxy(libc);
    }
}
