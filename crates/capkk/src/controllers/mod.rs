//! The KKCluster, KKMachine and KKInstance controllers.
