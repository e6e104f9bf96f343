package io.nixlconnect;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.equivalentTo;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Set;
import java.util.TreeSet;
import org.jspecify.annotations.NullMarked;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering {@code docs/architecture.md} draws, enforced: the API ({@code io.nixlconnect}) and the backends meet
 * only in the transport SPI; the public surface of each package is the list below. A new public type or a new
 * dependency across the boundary fails here: make the type package-private, or move it, or change the design on
 * purpose and this test with it.
 */
class ApiBoundaryTest {

    private static final String API = "io.nixlconnect";
    private static final String SPI = "io.nixlconnect.transport";
    private static final String EMBEDDED = "io.nixlconnect.transport.embedded..";
    private static final String NIXL = "io.nixlconnect.transport.nixl..";
    private static final String CUDA = "io.nixlconnect.cuda..";
    private static final String INTERNAL = "io.nixlconnect.internal..";

    private static JavaClasses classes;

    @BeforeAll
    static void importMainClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages(API);
    }

    @Test
    void theApiImportsNoBackend() {
        noClasses().that().resideInAPackage(API).should().dependOnClassesThat().resideInAnyPackage(EMBEDDED, NIXL)
                .check(classes);
    }

    @Test
    void theSpiKnowsNeitherTheApiNorAnyBackend() {
        noClasses().that().resideInAPackage(SPI).should().dependOnClassesThat(apiBesidesTheExceptionRoot()
                .or(resideInAnyPackage(EMBEDDED, NIXL))).check(classes);
    }

    @Test
    void backendsKnowTheSpiNotTheApiNorEachOther() {
        noClasses().that().resideInAPackage(EMBEDDED).should().dependOnClassesThat().resideInAnyPackage(API, NIXL)
                .check(classes);
        noClasses().that().resideInAPackage(NIXL).should().dependOnClassesThat().resideInAnyPackage(API, EMBEDDED)
                .check(classes);
    }

    @Test
    void cudaAndInternalStandBelowEverything() {
        noClasses().that().resideInAnyPackage(CUDA).should().dependOnClassesThat(apiBesidesTheExceptionRoot()
                .or(resideInAnyPackage(SPI, EMBEDDED, NIXL))).check(classes);
        noClasses().that().resideInAnyPackage(INTERNAL).should().dependOnClassesThat()
                .resideInAnyPackage(API, SPI, EMBEDDED, NIXL).check(classes);
    }

    /** What lets the SPI and CUDA extend {@link NixlConnectException}: it knows nothing else of the library. */
    @Test
    void theExceptionRootDependsOnNothingOfTheLibrary() {
        noClasses().that().belongToAnyOf(NixlConnectException.class).should().dependOnClassesThat(
                resideInAnyPackage("io.nixlconnect..").and(not(equivalentTo(NixlConnectException.class))))
                .check(classes);
    }

    /** One root: whatever this library throws or reports can be caught as a {@link NixlConnectException}. */
    @Test
    void everyPublicThrowableIsANixlConnectException() {
        Set<String> throwables = new TreeSet<>();
        Set<String> outsideTheRoot = new TreeSet<>();
        for (JavaClass type : classes) {
            if (type.getPackageName().startsWith(API) && type.getModifiers().contains(JavaModifier.PUBLIC)
                    && type.isAssignableTo(Throwable.class)) {
                throwables.add(type.getSimpleName());
                if (!type.isAssignableTo(NixlConnectException.class)) {
                    outsideTheRoot.add(type.getName());
                }
            }
        }
        assertThat(outsideTheRoot).isEmpty();
        assertThat(throwables).contains("InvalidMetadataException", "CudaUnavailableException",
                "CudaOperationException", "TransportException", "TransportUnavailableException",
                "InvalidAgentMetadataException", "TransferTimeoutException", "WaitTimeoutException");
    }

    private static DescribedPredicate<JavaClass> apiBesidesTheExceptionRoot() {
        return resideInAPackage(API).and(not(equivalentTo(NixlConnectException.class)))
                .as("classes of the API other than NixlConnectException");
    }

    @Test
    void backendsShowOnlyTheirSettingsAndProvider() {
        classes().that().resideInAnyPackage(EMBEDDED, NIXL).and().arePublic().should()
                .haveSimpleNameEndingWith("Settings").orShould().haveSimpleNameEndingWith("TransportProvider")
                .check(classes);
    }

    @Test
    void theApiPackageExportsExactlyThesePublicTypes() {
        assertThat(publicTypesIn(API)).containsExactly(
                "ActiveOperation", "BackendUnavailableException", "Connector", "ConnectorClosedException",
                "ConnectorOptions", "ConnectorOptions$Builder", "Descriptor", "Device", "DeviceKind",
                "InvalidMetadataException", "NixlConnectException", "Operation", "OperationKind", "OperationListener",
                "OperationStatus", "PassiveOperation", "PeerStatistics", "RdmaMetadata", "ReadOperation", "ReadableOperation",
                "SerializedDescriptor", "TooManyOperationsException", "TransferException", "TransferTimeoutException",
                "TransportFailureException", "TransportStatus", "WaitTimeoutException", "WritableOperation", "WriteOperation");
    }

    /** Nullness is in the types: every package with public types is null-marked, as Spring Boot 4's are. */
    @Test
    void everyPackageWithPublicTypesIsNullMarked() {
        Set<String> packages = new TreeSet<>();
        for (JavaClass type : classes) {
            if (type.getModifiers().contains(JavaModifier.PUBLIC) && !type.getPackageName().endsWith(".internal")) {
                packages.add(type.getPackageName());
            }
        }
        assertThat(packages).contains(API, SPI, "io.nixlconnect.cuda", "io.nixlconnect.transport.embedded",
                "io.nixlconnect.transport.nixl");
        for (String name : packages) {
            assertThat(classes.contain(name + ".package-info")).as("%s has a package-info.java", name).isTrue();
            assertThat(classes.get(name + ".package-info").isAnnotatedWith(NullMarked.class))
                    .as("@NullMarked on package %s (package-info.java)", name).isTrue();
        }
    }

    @Test
    void operationsAreSeenThroughTheSealedOperationInterface() {
        JavaClass abstractOperation = classes.get(AbstractOperation.class);
        assertThat(abstractOperation.getModifiers()).doesNotContain(JavaModifier.PUBLIC);
        assertThat(Operation.class.isSealed()).isTrue();
        assertThat(classes.get(Connection.class).getModifiers()).doesNotContain(JavaModifier.PUBLIC);
    }

    private static Set<String> publicTypesIn(String packageName) {
        Set<String> names = new TreeSet<>();
        for (JavaClass type : classes) {
            if (type.getPackageName().equals(packageName) && type.getModifiers().contains(JavaModifier.PUBLIC)
                    && !type.isAnonymousClass()) {
                names.add(type.getName().substring(packageName.length() + 1));
            }
        }
        return names;
    }
}
