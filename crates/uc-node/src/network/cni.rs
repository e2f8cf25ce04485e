//! The network configurations uc hands the CNI plugins (the CNI specification's network configuration,
//! the `bridge` and `loopback` plugins' fields and the `static` IPAM's), as types: a misspelt field does
//! not compile, where a plugin would ignore it.

use serde::Serialize;

/// The CNI specification version uc speaks.
const CNI_VERSION: &str = "1.0.0";

/// A plugin's network configuration: the specification's common fields and the plugin's own.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetConf {
    /// The specification's version.
    pub cni_version: &'static str,
    /// The network's name.
    pub name: &'static str,
    /// The plugin.
    #[serde(flatten)]
    pub plugin: Plugin,
}

/// The plugins uc uses, with their own fields.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Plugin {
    /// `loopback`: brings `lo` up.
    Loopback,
    /// `bridge`: a veth pair from the pod's namespace to a bridge.
    Bridge(Bridge),
}

/// The `bridge` plugin's fields.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bridge {
    /// The bridge's device name.
    pub bridge: String,
    /// Whether the plugin gives the bridge the gateway's address (uc gives it itself).
    pub is_gateway: bool,
    /// Whether traffic leaving the range is masqueraded.
    pub ip_masq: bool,
    /// Whether a pod may reach itself through a Service.
    pub hairpin_mode: bool,
    /// The addresses, from the `static` IPAM plugin.
    pub ipam: StaticIpam,
}

/// The `static` IPAM plugin's configuration.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "static")]
pub struct StaticIpam {
    /// The interface's addresses.
    pub addresses: Vec<Address>,
    /// The routes in the pod's namespace.
    pub routes: Vec<Route>,
}

/// An address with its prefix (`10.5.0.7/16`) and gateway.
#[derive(Debug, Serialize)]
pub struct Address {
    /// `a.b.c.d/len`.
    pub address: String,
    /// The gateway of the routes through it.
    pub gateway: String,
}

/// A route by destination network.
#[derive(Debug, Serialize)]
pub struct Route {
    /// `a.b.c.d/len`.
    pub dst: String,
}

impl NetConf {
    /// A configuration of uc's version for `plugin` on the network `name`.
    pub fn new(name: &'static str, plugin: Plugin) -> Self {
        Self { cni_version: CNI_VERSION, name, plugin }
    }

    /// The configuration as the plugin reads it on its standard input.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a network configuration is plain data")
    }
}
