//! The kinds of controller objects the engine runs: uc's UniversalController and Metacontroller's
//! CompositeController and DecoratorController. One reconcile core runs them all; the flavor decides
//! only names (finalizer, revision labels), the hook request and response layout, and how children
//! are claimed.

use kube::api::ApiResource;

/// Which kind of controller object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Flavor {
    /// `universalcontroller.njuics.cn/v1alpha1` UniversalController.
    Universal,
    /// `metacontroller.k8s.io/v1alpha1` CompositeController.
    Composite,
    /// `metacontroller.k8s.io/v1alpha1` DecoratorController.
    Decorator,
}

impl Flavor {
    /// All flavors, in the order the engine lists them.
    pub const ALL: [Flavor; 3] = [Flavor::Universal, Flavor::Composite, Flavor::Decorator];

    /// The flavor of a controller object's `kind`.
    pub fn of_kind(kind: &str) -> Option<Flavor> {
        match kind {
            "UniversalController" => Some(Flavor::Universal),
            "CompositeController" => Some(Flavor::Composite),
            "DecoratorController" => Some(Flavor::Decorator),
            _ => None,
        }
    }

    /// The object's kind.
    pub fn kind(self) -> &'static str {
        match self {
            Flavor::Universal => "UniversalController",
            Flavor::Composite => "CompositeController",
            Flavor::Decorator => "DecoratorController",
        }
    }

    /// The API resource of the controller objects.
    pub fn resource(self) -> ApiResource {
        let (group, version, api_version, plural) = match self {
            Flavor::Universal => (
                uc_api::controller::GROUP,
                uc_api::controller::VERSION,
                uc_api::controller::API_VERSION,
                "universalcontrollers",
            ),
            Flavor::Composite => {
                ("metacontroller.k8s.io", "v1alpha1", uc_api::metacontroller::API_VERSION, "compositecontrollers")
            }
            Flavor::Decorator => {
                ("metacontroller.k8s.io", "v1alpha1", uc_api::metacontroller::API_VERSION, "decoratorcontrollers")
            }
        };
        ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: api_version.into(),
            kind: self.kind().into(),
            plural: plural.into(),
        }
    }

    /// The finalizer the controller named `name` puts on parents while it has a finalize hook.
    pub fn finalizer(self, name: &str) -> String {
        match self {
            Flavor::Universal => format!("{}/{name}", uc_api::controller::GROUP),
            Flavor::Composite => uc_api::metacontroller::composite_finalizer(name),
            Flavor::Decorator => uc_api::metacontroller::decorator_finalizer(name),
        }
    }

    /// Where rolling updates keep their revisions (`apiVersion`), and the labels naming the parent
    /// type on them.
    pub fn revisions(self) -> (&'static str, [&'static str; 2]) {
        match self {
            Flavor::Universal | Flavor::Decorator => {
                (uc_api::controller::API_VERSION, [crate::revision::LABEL_API_GROUP, crate::revision::LABEL_RESOURCE])
            }
            Flavor::Composite => (
                uc_api::metacontroller::API_VERSION,
                [uc_api::metacontroller::LABEL_API_GROUP, uc_api::metacontroller::LABEL_RESOURCE],
            ),
        }
    }

    /// Whether the controller claims its parent type alone (a decorator adds to objects another
    /// controller may own).
    pub fn claims_parent_type(self) -> bool {
        self != Flavor::Decorator
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_metacontroller_gives_them() {
        assert_eq!(Flavor::Composite.finalizer("cats"), "metacontroller.io/compositecontroller-cats");
        assert_eq!(Flavor::Decorator.finalizer("spp"), "metacontroller.io/decoratorcontroller-spp");
        assert_eq!(Flavor::Universal.finalizer("foo"), "universalcontroller.njuics.cn/foo");
        for f in Flavor::ALL {
            assert_eq!(Flavor::of_kind(f.kind()), Some(f));
            assert_eq!(f.resource().kind, f.kind());
        }
        assert_eq!(Flavor::Composite.revisions().0, "metacontroller.k8s.io/v1alpha1");
        assert!(!Flavor::Decorator.claims_parent_type());
    }
}
