//! Every JSON artifact names its schema and version, first: readers (and
//! `host/schemas/*.schema.json`) can tell what they hold and which shape.

use serde::Serialize;

/// A schema name and version (`host/schemas/<file>.schema.json`).
#[derive(Clone, Copy, Debug)]
pub struct Schema {
    pub name: &'static str,
    pub version: u32,
}

pub const PROFILE: Schema = Schema {
    name: "ipuc.profile",
    version: 2,
};
pub const OPERATIONS: Schema = Schema {
    name: "ipuc.operations",
    version: 1,
};
pub const MEMORY_MAP: Schema = Schema {
    name: "ipuc.memory-map",
    version: 1,
};
pub const MEMORY_REJECTION: Schema = Schema {
    name: "ipuc.memory-rejection",
    version: 2,
};
pub const PACKAGE_VIEW: Schema = Schema {
    name: "ipuc.package-view",
    version: 1,
};

/// `body`'s fields after `schema` and `schema_version`.
#[derive(Serialize)]
pub struct Artifact<'a, T: Serialize> {
    schema: &'static str,
    schema_version: u32,
    #[serde(flatten)]
    body: &'a T,
}

impl Schema {
    pub fn wrap<T: Serialize>(self, body: &T) -> Artifact<'_, T> {
        Artifact {
            schema: self.name,
            schema_version: self.version,
            body,
        }
    }
}
