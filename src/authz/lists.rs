//! The ACL lists of Mesos' `ACLs` message (acls.proto), plus nestguard's
//! `manage_nested_containers`, and which list each authorization action uses.
//!
//! One table drives loading (JSON key and object-entity key), validation (the
//! lists whose object must be ANY or NONE), compilation and explanation, so a
//! list cannot be known to one stage and missing from another.

use crate::proto::mesos::authorization::Action;

/// What Mesos' validation requires of a list's object entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectRule {
    /// Any entity type is accepted.
    Free,
    /// `SOME` is rejected: "ACL.`<Message>` type must be either NONE or ANY".
    AnyOrNone,
    /// `SOME` values must be authorizable endpoint paths.
    Endpoints,
    /// Role names, matched hierarchically (`a/%` covers `a/b`).
    Roles,
}

/// Static facts about one ACL list.
#[derive(Debug)]
pub struct ListSpec {
    /// The JSON key (the proto field name), e.g. `kill_nested_containers`.
    pub json: &'static str,
    /// The `ACL.<Message>` name used in Mesos' validation errors.
    pub message: &'static str,
    /// The JSON key of the object entity (field 2), e.g. `users`.
    pub object: &'static str,
    /// The field number in `ACLs` (0 for nestguard's own list).
    pub field: u32,
    /// Validation rule for the object entity.
    pub rule: ObjectRule,
}

macro_rules! lists {
    ($($variant:ident = $field:literal, $json:literal, $message:literal, $object:literal, $rule:ident;)*) => {
        /// One ACL list. The discriminant indexes [`List::ALL`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum List {
            $(
                #[doc = concat!("`", $json, "`")]
                $variant,
            )*
        }

        impl List {
            /// Every list, in `ACLs` field order, then `manage_nested_containers`.
            pub const ALL: &'static [List] = &[$(List::$variant),*];

            /// The list's static facts.
            pub fn spec(self) -> &'static ListSpec {
                &SPECS[self as usize]
            }
        }

        static SPECS: &[ListSpec] = &[$(ListSpec {
            json: $json,
            message: $message,
            object: $object,
            field: $field,
            rule: ObjectRule::$rule,
        }),*];
    };
}

lists! {
    RegisterFrameworks = 2, "register_frameworks", "RegisterFramework", "roles", Roles;
    RunTasks = 3, "run_tasks", "RunTask", "users", Free;
    ReserveResources = 5, "reserve_resources", "ReserveResources", "roles", Roles;
    UnreserveResources = 6, "unreserve_resources", "UnreserveResources", "reserver_principals", Free;
    CreateVolumes = 7, "create_volumes", "CreateVolume", "roles", Roles;
    DestroyVolumes = 8, "destroy_volumes", "DestroyVolume", "creator_principals", Free;
    TeardownFrameworks = 11, "teardown_frameworks", "TeardownFramework", "framework_principals", Free;
    UpdateWeights = 12, "update_weights", "UpdateWeight", "roles", Roles;
    GetEndpoints = 13, "get_endpoints", "GetEndpoint", "paths", Endpoints;
    GetQuotas = 14, "get_quotas", "GetQuota", "roles", Roles;
    UpdateQuotas = 15, "update_quotas", "UpdateQuota", "roles", Roles;
    ViewFrameworks = 16, "view_frameworks", "ViewFramework", "users", Free;
    ViewTasks = 17, "view_tasks", "ViewTask", "users", Free;
    ViewExecutors = 18, "view_executors", "ViewExecutor", "users", Free;
    AccessSandboxes = 19, "access_sandboxes", "AccessSandbox", "users", Free;
    AccessMesosLogs = 20, "access_mesos_logs", "AccessMesosLog", "logs", AnyOrNone;
    ViewRoles = 21, "view_roles", "ViewRole", "roles", Roles;
    ViewFlags = 22, "view_flags", "ViewFlags", "flags", AnyOrNone;
    LaunchNestedContainersAsUser = 23, "launch_nested_containers_as_user", "LaunchNestedContainerAsUser", "users", Free;
    LaunchNestedContainersUnderParentWithUser = 24, "launch_nested_containers_under_parent_with_user", "LaunchNestedContainerUnderParentWithUser", "users", Free;
    KillNestedContainers = 25, "kill_nested_containers", "KillNestedContainer", "users", Free;
    WaitNestedContainers = 26, "wait_nested_containers", "WaitNestedContainer", "users", Free;
    LaunchNestedContainerSessionsAsUser = 27, "launch_nested_container_sessions_as_user", "LaunchNestedContainerSessionAsUser", "users", Free;
    LaunchNestedContainerSessionsUnderParentWithUser = 28, "launch_nested_container_sessions_under_parent_with_user", "LaunchNestedContainerSessionUnderParentWithUser", "users", Free;
    AttachContainersInput = 29, "attach_containers_input", "AttachContainerInput", "users", Free;
    AttachContainersOutput = 30, "attach_containers_output", "AttachContainerOutput", "users", Free;
    ViewContainers = 31, "view_containers", "ViewContainer", "users", Free;
    SetLogLevel = 32, "set_log_level", "SetLogLevel", "level", AnyOrNone;
    RemoveNestedContainers = 33, "remove_nested_containers", "RemoveNestedContainer", "users", Free;
    RegisterAgents = 34, "register_agents", "RegisterAgent", "agents", AnyOrNone;
    UpdateMaintenanceSchedules = 35, "update_maintenance_schedules", "UpdateMaintenanceSchedule", "machines", AnyOrNone;
    GetMaintenanceSchedules = 36, "get_maintenance_schedules", "GetMaintenanceSchedule", "machines", AnyOrNone;
    StartMaintenances = 37, "start_maintenances", "StartMaintenance", "machines", AnyOrNone;
    StopMaintenances = 38, "stop_maintenances", "StopMaintenance", "machines", AnyOrNone;
    GetMaintenanceStatuses = 39, "get_maintenance_statuses", "GetMaintenanceStatus", "machines", AnyOrNone;
    MarkAgentsGone = 40, "mark_agents_gone", "MarkAgentGone", "agents", Free;
    LaunchStandaloneContainers = 41, "launch_standalone_containers", "LaunchStandaloneContainer", "users", AnyOrNone;
    KillStandaloneContainers = 42, "kill_standalone_containers", "KillStandaloneContainer", "users", AnyOrNone;
    WaitStandaloneContainers = 43, "wait_standalone_containers", "WaitStandaloneContainer", "users", AnyOrNone;
    RemoveStandaloneContainers = 44, "remove_standalone_containers", "RemoveStandaloneContainer", "users", AnyOrNone;
    ModifyResourceProviderConfigs = 45, "modify_resource_provider_configs", "ModifyResourceProviderConfig", "resource_providers", AnyOrNone;
    ViewStandaloneContainers = 46, "view_standalone_containers", "ViewStandaloneContainer", "users", AnyOrNone;
    PruneImages = 47, "prune_images", "PruneImages", "images", AnyOrNone;
    ResizeVolumes = 48, "resize_volumes", "ResizeVolume", "roles", Roles;
    CreateBlockDisks = 49, "create_block_disks", "CreateBlockDisk", "roles", Roles;
    DestroyBlockDisks = 50, "destroy_block_disks", "DestroyBlockDisk", "roles", Roles;
    CreateMountDisks = 51, "create_mount_disks", "CreateMountDisk", "roles", Roles;
    DestroyMountDisks = 52, "destroy_mount_disks", "DestroyMountDisk", "roles", Roles;
    ViewResourceProviders = 53, "view_resource_providers", "ViewResourceProvider", "resource_providers", AnyOrNone;
    MarkResourceProvidersGone = 54, "mark_resource_providers_gone", "MarkResourceProvidersGone", "resource_providers", AnyOrNone;
    DestroyRawDisks = 55, "destroy_raw_disks", "DestroyRawDisk", "roles", Roles;
    DrainAgents = 56, "drain_agents", "DrainAgent", "agents", AnyOrNone;
    DeactivateAgents = 57, "deactivate_agents", "DeactivateAgent", "agents", AnyOrNone;
    ReactivateAgents = 58, "reactivate_agents", "ReactivateAgent", "agents", AnyOrNone;
    ManageNestedContainers = 0, "manage_nested_containers", "ManageNestedContainer", "users", Free;
}

/// The order in which Mesos' `LocalAuthorizer::validate` checks lists; the
/// first failing entry's error is the one reported, as in Mesos.
pub const VALIDATION_ORDER: &[List] = &[
    List::AccessMesosLogs,
    List::ViewFlags,
    List::SetLogLevel,
    List::GetEndpoints,
    List::RegisterAgents,
    List::UpdateMaintenanceSchedules,
    List::GetMaintenanceSchedules,
    List::StartMaintenances,
    List::StopMaintenances,
    List::GetMaintenanceStatuses,
    List::DrainAgents,
    List::DeactivateAgents,
    List::ReactivateAgents,
    List::LaunchStandaloneContainers,
    List::KillStandaloneContainers,
    List::WaitStandaloneContainers,
    List::RemoveStandaloneContainers,
    List::ViewStandaloneContainers,
    List::MarkResourceProvidersGone,
    List::ViewResourceProviders,
    List::ModifyResourceProviderConfigs,
    List::PruneImages,
];

/// Endpoints an ACL may name in `get_endpoints` (Mesos' `AUTHORIZABLE_ENDPOINTS`).
pub const AUTHORIZABLE_ENDPOINTS: &[&str] = &[
    "/containers",
    "/containerizer/debug",
    "/files/debug",
    "/logging/toggle",
    "/metrics/snapshot",
    "/monitor/statistics",
];

impl List {
    /// Looks a list up by its JSON key.
    pub fn from_json_key(key: &str) -> Option<List> {
        List::ALL.iter().copied().find(|l| l.spec().json == key)
    }

    /// The lists `manage_nested_containers` entries are appended to.
    pub fn receives_manage(self) -> bool {
        matches!(
            self,
            List::LaunchNestedContainersUnderParentWithUser
                | List::KillNestedContainers
                | List::WaitNestedContainers
                | List::RemoveNestedContainers
        )
    }

    /// Whether this is one of the nested-container lists (for lint).
    pub fn is_nested_container(self) -> bool {
        matches!(
            self,
            List::LaunchNestedContainersAsUser
                | List::LaunchNestedContainersUnderParentWithUser
                | List::KillNestedContainers
                | List::WaitNestedContainers
                | List::LaunchNestedContainerSessionsAsUser
                | List::LaunchNestedContainerSessionsUnderParentWithUser
                | List::AttachContainersInput
                | List::AttachContainersOutput
                | List::RemoveNestedContainers
                | List::ManageNestedContainers
        )
    }
}

/// How an action is decided (Mesos' `getApprover` dispatch for a subject with
/// a principal value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// First match over one list, with the action's object rule.
    Generic(List),
    /// Launches: parent list (executor's user) AND child list (command user).
    Nested {
        /// Object = the executor's (or framework's) user.
        parent: List,
        /// Object = the command's user.
        child: List,
    },
    /// Role actions: first match with hierarchical role values.
    Roles(List),
    /// `UNKNOWN`: every object is rejected.
    Reject,
}

/// The route for an action.
pub fn route(action: Action) -> Route {
    use Action as A;
    use List as L;
    let generic = Route::Generic;
    match action {
        A::Unknown => Route::Reject,
        A::LaunchNestedContainer => Route::Nested {
            parent: L::LaunchNestedContainersUnderParentWithUser,
            child: L::LaunchNestedContainersAsUser,
        },
        A::LaunchNestedContainerSession => Route::Nested {
            parent: L::LaunchNestedContainerSessionsUnderParentWithUser,
            child: L::LaunchNestedContainerSessionsAsUser,
        },
        A::RegisterFramework => Route::Roles(L::RegisterFrameworks),
        A::ReserveResources => Route::Roles(L::ReserveResources),
        A::CreateVolume => Route::Roles(L::CreateVolumes),
        A::ResizeVolume => Route::Roles(L::ResizeVolumes),
        A::UpdateWeight => Route::Roles(L::UpdateWeights),
        A::ViewRole => Route::Roles(L::ViewRoles),
        A::GetQuota => Route::Roles(L::GetQuotas),
        #[expect(deprecated, reason = "Mesos still routes the deprecated action")]
        A::UpdateQuota => Route::Roles(L::UpdateQuotas),
        A::UpdateQuotaWithConfig => Route::Roles(L::UpdateQuotas),
        A::CreateBlockDisk => Route::Roles(L::CreateBlockDisks),
        A::DestroyBlockDisk => Route::Roles(L::DestroyBlockDisks),
        A::CreateMountDisk => Route::Roles(L::CreateMountDisks),
        A::DestroyMountDisk => Route::Roles(L::DestroyMountDisks),
        A::DestroyRawDisk => Route::Roles(L::DestroyRawDisks),
        A::RunTask => generic(L::RunTasks),
        A::TeardownFramework => generic(L::TeardownFrameworks),
        A::UnreserveResources => generic(L::UnreserveResources),
        A::DestroyVolume => generic(L::DestroyVolumes),
        A::GetEndpointWithPath => generic(L::GetEndpoints),
        A::ViewFramework => generic(L::ViewFrameworks),
        A::ViewTask => generic(L::ViewTasks),
        A::ViewExecutor => generic(L::ViewExecutors),
        A::AccessSandbox => generic(L::AccessSandboxes),
        A::AccessMesosLog => generic(L::AccessMesosLogs),
        A::ViewFlags => generic(L::ViewFlags),
        A::KillNestedContainer => generic(L::KillNestedContainers),
        A::WaitNestedContainer => generic(L::WaitNestedContainers),
        A::AttachContainerInput => generic(L::AttachContainersInput),
        A::AttachContainerOutput => generic(L::AttachContainersOutput),
        A::ViewContainer => generic(L::ViewContainers),
        A::SetLogLevel => generic(L::SetLogLevel),
        A::RemoveNestedContainer => generic(L::RemoveNestedContainers),
        A::RegisterAgent => generic(L::RegisterAgents),
        A::UpdateMaintenanceSchedule => generic(L::UpdateMaintenanceSchedules),
        A::GetMaintenanceSchedule => generic(L::GetMaintenanceSchedules),
        A::StartMaintenance => generic(L::StartMaintenances),
        A::StopMaintenance => generic(L::StopMaintenances),
        A::GetMaintenanceStatus => generic(L::GetMaintenanceStatuses),
        A::MarkAgentGone => generic(L::MarkAgentsGone),
        A::LaunchStandaloneContainer => generic(L::LaunchStandaloneContainers),
        A::KillStandaloneContainer => generic(L::KillStandaloneContainers),
        A::WaitStandaloneContainer => generic(L::WaitStandaloneContainers),
        A::RemoveStandaloneContainer => generic(L::RemoveStandaloneContainers),
        A::ViewStandaloneContainer => generic(L::ViewStandaloneContainers),
        A::ModifyResourceProviderConfig => generic(L::ModifyResourceProviderConfigs),
        A::ViewResourceProvider => generic(L::ViewResourceProviders),
        A::MarkResourceProviderGone => generic(L::MarkResourceProvidersGone),
        A::PruneImages => generic(L::PruneImages),
        A::DrainAgent => generic(L::DrainAgents),
        A::DeactivateAgent => generic(L::DeactivateAgents),
        A::ReactivateAgent => generic(L::ReactivateAgents),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_every_acls_field() {
        assert_eq!(List::ALL.len(), 55);
        let fields: Vec<u32> = List::ALL.iter().map(|l| l.spec().field).collect();
        for n in 2..=58u32 {
            let expected = !matches!(n, 4 | 9 | 10);
            assert_eq!(fields.contains(&n), expected, "field {n}");
        }
        for (i, l) in List::ALL.iter().enumerate() {
            assert_eq!(*l as usize, i);
            assert_eq!(List::from_json_key(l.spec().json), Some(*l));
        }
    }
}
