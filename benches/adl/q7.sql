-- ADL Q7: per event, the scalar sum of the transverse momenta of the jets
-- with pt > 30 GeV that are not within delta R 0.4 of any light lepton
-- (muon or electron) with pt > 10 GeV; 0 when no jet qualifies.
SELECT coalesce(array_sum(array_transform(
         array_filter(range(1, nJet + 1), j ->
             Jet_pt[j] > 30
             AND NOT any_match(range(1, nMuon + 1), l ->
                 Muon_pt[l] > 10 AND delta_r(Jet_eta[j], Jet_phi[j], Muon_eta[l], Muon_phi[l]) < 0.4)
             AND NOT any_match(range(1, nElectron + 1), l ->
                 Electron_pt[l] > 10 AND delta_r(Jet_eta[j], Jet_phi[j], Electron_eta[l], Electron_phi[l]) < 0.4)),
         j -> CAST(Jet_pt[j] AS DOUBLE))), 0.0) AS x
FROM events
